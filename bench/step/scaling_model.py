#!/usr/bin/env python3
"""scaling_model: the step-time model of docs/scaling.md, fitted to one
bench/run.sh output directory, checked against what it measured, and
extrapolated to a 100 Gb/s InfiniBand cluster.

  scaling_model.py OUT [--ib_alpha_us 2.0] [--ib_GBps 11.5] [--post_us 0.3]

Fitted from OUT (measured in that run):
  alpha, bw      rt_bench tcp p50 round trips: alpha = median of the 8 B rows, bw from the largest size
  T_c            compute_us p50 of the W=1, P=1 sync run of each model
  BW_add, BW_adam  ps_apply_bench GB/s (p50) of vec_add and adam_apply at the mlp shard size
Assumed for InfiniBand (flags; NOT measured here): small-op round trip
alpha_ib, usable link bandwidth bw_ib, CPU cost to post one work request.
Prints markdown tables (model vs measured here; predictions).
"""
import json
import os
import sys


def die(msg):
    """bad input: say what is wrong, exit 2"""
    print(msg, file=sys.stderr)
    sys.exit(2)


def arg(name, default):
    if name in sys.argv:
        i = sys.argv.index(name)
        try:
            return float(sys.argv[i + 1])
        except (IndexError, ValueError):
            die("scaling_model: %s needs a number" % name)
    return default


def step_sync(m, W, P, B):
    """critical path of one sync global step (R = W), microseconds"""
    b = B / P
    a, bw = m["alpha"], m["bw"]  # us, bytes/us
    pull = P * 2 * a + max(B / bw, W * b / bw)          # READ + fenced READ per shard; ps egress W*b
    push = P * 2 * a + max(B / bw, W * b / bw)          # WRITE + FETCH_ADD per shard; ps ingress W*b
    agg = 3 * (W - 1) * b / m["bw_add"]                 # W-1 vector adds (12 B per float)
    apply_ = 8 * b / m["bw_adam"]                       # fused Adam (32 B per float)
    release = W * m["post"] + a / 2                     # W mailbox WRITEs posted, one-way latency
    copies = 2 * 2 * B / m["bw_add"]                    # gather + scatter on the worker (read + write)
    ps = agg + apply_ + release
    return {"total": m["Tc"] + pull + push + ps + copies, "compute": m["Tc"], "pull": pull, "push": push,
            "ps": ps, "copies": copies, "ps_link": 2 * W * b / bw}


def async_limit(m, W, P, B):
    """async: a worker's step, and the ps shard's utilisation (>= 1: ps-bound)"""
    b = B / P
    a, bw = m["alpha"], m["bw"]
    per_grad_ps = b / bw + 8 * b / m["bw_adam"] + m["post"] + b / bw  # ingress, apply, release, the pull
    t_w = m["Tc"] + P * 4 * a + 2 * B / bw + 2 * 2 * B / m["bw_add"] + 8 * b / m["bw_adam"]
    util = W * per_grad_ps / t_w
    return t_w, util


def best_p(m, W, B, pmax=256):
    """the fewest shards whose step is within 2% of the best over 1..pmax"""
    best = min(step_sync(m, W, P, B)["total"] for P in range(1, pmax + 1))
    return next(P for P in range(1, pmax + 1) if step_sync(m, W, P, B)["total"] <= 1.02 * best)


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__)
        return 2
    out = sys.argv[1]
    try:
        rep = json.load(open(os.path.join(out, "report.json")))
    except (OSError, ValueError) as e:
        die("scaling_model: %s/report.json: %s (run bench/step/report.py first)" % (out, e))
    fit = rep.get("transport_fit")
    pa = {(q["what"], q["floats"]): q for q in rep.get("ps_apply", [])}
    an = {q["config"]: q for q in rep.get("anatomy", [])}
    if not fit or not pa or not an:
        die("scaling_model: %s lacks the transport fit, ps_apply or anatomy figures" % out)
    nmlp = 79510
    try:
        bw_add = pa[("vec_add", nmlp)]["gbps"] * 1e3      # GB/s -> bytes/us
        bw_adam = pa[("adam_apply", nmlp)]["gbps"] * 1e3
    except KeyError:
        die("scaling_model: ps_apply rows for %d floats missing" % nmlp)
    models = {}
    for name, B in (("mlp", 318152), ("lstm", 326792)):
        c = an.get("%s P=1 W=1 sync" % name)
        if c:
            models[name] = (B, c["phases_us"]["compute_us"]["p50"], c)
    here = {"alpha": fit["alpha_us"], "bw": 1.0 / fit["beta_us_per_byte"], "bw_add": bw_add, "bw_adam": bw_adam,
            "post": arg("--post_us", 0.3)}
    ib = dict(here, alpha=arg("--ib_alpha_us", 2.0), bw=arg("--ib_GBps", 11.5) * 1e3)
    print("## Fitted here (from %s)\n" % out)
    print("| parameter | value | from |\n|---|---|---|")
    print("| alpha (small round trip, tcp loopback) | %.1f µs | rt_bench, median 8 B p50 (READ, WRITE, FETCH_ADD) |" % here["alpha"])
    print("| bw (tcp loopback) | %.2f GB/s | rt_bench, slope from 8 B to the largest size |" % (here["bw"] / 1e3))
    print("| BW_add | %.1f GB/s | ps_apply vec_add, %d floats |" % (bw_add / 1e3, nmlp))
    print("| BW_adam | %.1f GB/s | ps_apply adam_apply, %d floats |" % (bw_adam / 1e3, nmlp))
    for name, (B, tc, c) in models.items():
        print("| T_c %s | %.0f µs | compute p50, %s P=1 W=1 sync |" % (name, tc, name))
    print("\n## Model against this machine (tcp loopback, sync, P=1)\n")
    print("Left column: T_c = compute p50 of W=1. Second: T_c = compute p50 measured in that run (on 2 cores "
          "shared by W workers, the ps and its TCP progress thread, compute itself slows down; the model has no "
          "CPU-oversubscription term).\n")
    print("| model | W | predicted step µs (T_c of W=1) | predicted (T_c of this W) | measured step p50 µs | measured step avg µs |\n|---|---|---|---|---|---|")
    for name, (B, tc, _) in models.items():
        m = dict(here, Tc=tc)
        for W in (1, 2, 3, 4):
            c = an.get("%s P=1 W=%d sync" % (name, W))
            if not c:
                continue
            pr = step_sync(m, W, 1, B)["total"]
            pr2 = step_sync(dict(m, Tc=c["phases_us"]["compute_us"]["p50"]), W, 1, B)["total"]
            print("| %s | %d | %.0f | %.0f | %.0f | %.0f |" % (name, W, pr, pr2, c["phases_us"]["total_us"]["p50"],
                                                             c["phases_us"]["total_us"]["avg"]))
    print("\n## Prediction: 100 Gb/s InfiniBand (alpha %.1f µs, %.1f GB/s usable, %.1f µs per posted WR: "
          "assumed), same CPU per task as here\n" % (ib["alpha"], ib["bw"] / 1e3, ib["post"]))
    print("| model | W | sync step µs, P=1 | ps part of it | sync step µs, P=W/8 | best P | sync step µs at best P | "
          "TF global steps/s at best P | gradients/s at best P | async ps utilisation, P=1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (B, tc, _) in models.items():
        m = dict(ib, Tc=tc)
        for W in (8, 64, 256):
            s1 = step_sync(m, W, 1, B)
            pw = max(1, W // 8)
            s8 = step_sync(m, W, pw, B)
            bp = best_p(m, W, B)
            sb = step_sync(m, W, bp, B)
            _, util = async_limit(m, W, 1, B)
            print("| %s | %d | %.0f | %.0f%% | %.0f (P=%d) | %d | %.0f | %.0f | %.0f | %.2f |" % (
                name, W, s1["total"], 100 * (s1["ps"] + s1["ps_link"] - 2 * B / m["bw"]) / s1["total"], s8["total"],
                pw, bp, sb["total"], 1e6 / sb["total"], W * 1e6 / sb["total"], util))
    print("\n## Where the ps becomes the bottleneck (IB, P=1): the smallest W where the ps terms "
          "(link serialisation beyond one worker's own transfer, aggregation, apply, releases) exceed T_c\n")
    print("| model | sync: W at which ps terms > T_c (P=1) | shards to bring them back under T_c at 64 / 256 workers | async: W at which ps utilisation >= 1 (P=1) |")
    print("|---|---|---|---|")
    for name, (B, tc, _) in models.items():
        m = dict(ib, Tc=tc)

        def ps_terms(W, P):
            s = step_sync(m, W, P, B)
            return s["ps"] + s["ps_link"] - 2 * B / m["bw"]
        wsync = next((W for W in range(1, 4097) if ps_terms(W, 1) > tc), None)
        need = []
        for W in (64, 256):
            need.append(next((P for P in range(1, 1025) if ps_terms(W, P) <= tc), None))
        wasync = next((W for W in range(1, 4097) if async_limit(m, W, 1, B)[1] >= 1), None)
        print("| %s | %s | %s / %s | %s |" % (name, wsync, need[0], need[1], wasync))
    return 0


if __name__ == "__main__":
    sys.exit(main())
