#!/usr/bin/env python3
"""scaling_model: the step-time model of docs/scaling.md, fitted to one
bench/run.sh output directory, checked against what it measured, and
extrapolated to a 100 Gb/s InfiniBand cluster.

  scaling_model.py OUT [--ib_alpha_us 2.0] [--ib_GBps 11.5] [--post_us 0.3]

Fitted from OUT (measured in that run):
  alpha, bw      rt_bench tcp p50 round trips: alpha = median of the 8 B rows, bw from the largest size
  T_c            compute_us p50 of the W=1, P=1 sync run of each model
  BW_add, BW_adam  ps_apply_bench GB/s (p50) of vec_add and adam_apply at the mlp shard size
Assumed (flags; NOT measured here): for InfiniBand the small-op round trip
alpha_ib and the usable link bandwidth bw_ib; for both transports the CPU
cost to post one work request (post).
The phase terms follow the code (src/worker/worker.c, src/ps/shard.c) for
each transport: tcp (RT_CAP_ORDERED_PLACEMENT: WRITE + FETCH_ADD posted back
to back, not waited for; the fenced READ rides behind the bulk READ) and
verbs (no ordered placement: the WRITE is waited for before the FETCH_ADD;
IBV_SEND_FENCE starts the 8-byte READ only after the bulk READ completed).
The tables on this machine use tcp; the InfiniBand prediction uses verbs.
Prints markdown tables (model vs measured here; predictions).
"""
import json
import os
import sys

FLAGS = {"--ib_alpha_us": 2.0, "--ib_GBps": 11.5, "--post_us": 0.3}
# floats of each model, and its tensors (pieces per step: docs/placement.md)
MODELS = (("mlp", 79510, 4), ("lstm", 81674, 4))
HDR = 64  # slot header bytes, WRITTEN with every push
WORD = 8  # the fenced version READ, the FETCH_ADD


def die(msg):
    """bad input: say what is wrong, exit 2"""
    print(msg, file=sys.stderr)
    sys.exit(2)


def parse(argv):
    """OUT and the flags; anything else is an error"""
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    out, vals, i = None, dict(FLAGS), 0
    while i < len(argv):
        a = argv[i]
        name, eq, v = a.partition("=")
        if name in FLAGS:
            if not eq:
                if i + 1 >= len(argv):
                    die("scaling_model: %s needs a number" % name)
                i += 1
                v = argv[i]
            try:
                vals[name] = float(v)
            except ValueError:
                die("scaling_model: %s needs a number, not '%s'" % (name, v))
            if not vals[name] > 0 or vals[name] != vals[name] or vals[name] == float("inf"):
                die("scaling_model: %s must be a positive number, not '%s'" % (name, v))
        elif a.startswith("-"):
            die("scaling_model: unknown flag '%s' (flags: %s)" % (a, ", ".join(FLAGS)))
        elif out is None:
            out = a
        else:
            die("scaling_model: one output directory only ('%s' and '%s')" % (out, a))
        i += 1
    if out is None:
        die("scaling_model: no output directory given (bench/run.sh --out DIR)")
    return out, vals


def pieces(P, nt):
    """pieces the worker moves per step: one (merged) on one shard, at most
    nt + P - 1 over P shards (docs/placement.md), charged at that bound"""
    return 1 if P == 1 else nt + P - 1


def step_sync(m, W, P, n, nt):
    """critical path of one sync global step (R = W), microseconds, with the
    phases as the worker records them.  m["ordered"]: the transport has
    RT_CAP_ORDERED_PLACEMENT (tcp) or not (verbs)."""
    a, bw, post = m["alpha"], m["bw"], m["post"]  # us, bytes/us, us
    ordered = m["ordered"]
    Bpull = 4 * n + WORD * P                     # the pieces + a version word per shard
    Bpush = 4 * n + (HDR + WORD) * P             # the pieces + slot header + counter per shard
    ns = n / P                                    # floats per shard
    # All shards are posted before any wait: a phase moves the worker's
    # B bytes over its own link while each ps link carries W shards' b.
    xpull = max(Bpull, W * Bpull / P) / bw
    xpush = max(Bpush, W * Bpush / P) / bw
    npc = pieces(P, nt)
    # pull: READ the pieces + fenced 8-byte READ per shard, one wait per
    # shard.  tcp: the fence holds trivially (in-order target), one round
    # trip.  verbs: the fenced READ starts after the bulk READ completed.
    pull = (npc + P) * post + (a if ordered else 2 * a) + xpull
    # push: WRITE the pieces + the slot header, FETCH_ADD the counter.
    # tcp: posted back to back, the worker does not wait: its push ends
    # when its own bytes are handed to the socket (Bpush / bw); the ps sees
    # the counter one one-way latency after the last of the W workers'
    # bytes crossed its link.  verbs: wait for the WRITEs (a round trip over
    # the busier link), then the FETCH_ADD (the ps sees it a/2 later; the
    # worker waits for its reply, a).
    ppost = (npc + 2 * P) * post
    if ordered:
        push_rec, push_vis = ppost + Bpush / bw, ppost + xpush + a / 2
    else:
        push_rec, push_vis = ppost + a + xpush + a, ppost + a + xpush + a / 2
    # ps, per shard: all W gradients land together (equal-speed workers,
    # fair-shared link) and are summed where they lie: W = 2 is the fused
    # Adam pass over both slots alone; W >= 3 first sums two slots
    # (rdm_vec_sum2) and adds W-3 more (12 B per float each), then the
    # fused Adam with the last (32 B per float); then W mailbox WRITEs
    # posted, the last one lands a/2 later.
    agg = 12 * ns * (W - 2) / m["bw_add"] if W >= 3 else 0.0
    apply_ = 32 * ns / m["bw_adam"]
    ps = agg + apply_ + W * post
    rel = a / 2
    total = m["Tc"] + pull + push_vis + ps + rel
    return {"total": total, "compute": m["Tc"], "pull": pull, "push": push_rec,
            "wait": total - m["Tc"] - pull - push_rec, "ps": ps,
            # the ps's link busy beyond one worker's own transfer
            "ps_link": xpull + xpush - (Bpull + Bpush) / bw}


def ps_terms(s):
    """what grows with W at the ps: its work and its extra link time"""
    return s["ps"] + s["ps_link"]


def async_limit(m, W, P, n, nt):
    """async: a worker's step (its gradient applied alone), and a ps shard's
    utilisation (>= 1: ps-bound).  The shard's CPU (Adam + the release) and
    each direction of its link (the gradient in, the pull that follows out)
    work at the same time (a NIC, or the tcp progress thread): the busiest
    of the three saturates first."""
    t_w = step_sync(m, 1, P, n, nt)["total"]
    ns = n / P
    cpu = 32 * ns / m["bw_adam"] + m["post"]
    link = (4 * ns + HDR + WORD) / m["bw"]  # the gradient in (the pull out is 72 B less)
    return t_w, W * max(cpu, link) / t_w


def best_p(m, W, n, nt, pmax=256):
    """the fewest shards whose step is within 2% of the best over 1..pmax"""
    t = [step_sync(m, W, P, n, nt)["total"] for P in range(1, pmax + 1)]
    best = min(t)
    return next(P for P in range(1, pmax + 1) if t[P - 1] <= 1.02 * best)


def main():
    out, fl = parse(sys.argv[1:])
    try:
        return tables(out, fl)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        die("scaling_model: %s/report.json: a figure is missing or malformed (%s: %s)" % (out, type(e).__name__, e))


def tables(out, fl):
    try:
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        die("scaling_model: %s/report.json: %s (run bench/step/report.py first)" % (out, e))
    if not isinstance(rep, dict):
        die("scaling_model: %s/report.json is not a report.py report" % out)
    fit = rep.get("transport_fit")
    try:
        pa = {(q["what"], q["floats"]): q for q in rep.get("ps_apply", [])}
        an = {q["config"]: q for q in rep.get("anatomy", [])}
    except (KeyError, TypeError):
        die("scaling_model: %s/report.json: malformed ps_apply or anatomy entries" % out)
    if not fit or not pa or not an:
        die("scaling_model: %s lacks the transport fit, ps_apply or anatomy figures" % out)
    nmlp = MODELS[0][1]
    try:
        bw_add = pa[("vec_add", nmlp)]["gbps"] * 1e3      # GB/s -> bytes/us
        bw_adam = pa[("adam_apply", nmlp)]["gbps"] * 1e3
        here = {"alpha": float(fit["alpha_us"]), "bw": 1.0 / float(fit["beta_us_per_byte"]), "bw_add": bw_add,
                "bw_adam": bw_adam, "post": fl["--post_us"], "ordered": True}
    except KeyError:
        die("scaling_model: ps_apply rows for %d floats or transport fit fields missing" % nmlp)
    except (TypeError, ValueError, ZeroDivisionError):
        die("scaling_model: %s/report.json: transport fit is not a positive latency and slope" % out)
    if not (here["alpha"] > 0 and here["bw"] > 0 and bw_add > 0 and bw_adam > 0):
        die("scaling_model: %s: non-positive fitted figures (alpha %s, bw %s, BW_add %s, BW_adam %s)"
            % (out, here["alpha"], here["bw"], bw_add, bw_adam))
    models = {}
    for name, n, nt in MODELS:
        c = an.get("%s P=1 W=1 sync" % name)
        if c:
            models[name] = (n, nt, c["phases_us"]["compute_us"]["p50"])
    if not models:
        die("scaling_model: %s has no 'P=1 W=1 sync' anatomy run to take T_c from" % out)
    ib = dict(here, alpha=fl["--ib_alpha_us"], bw=fl["--ib_GBps"] * 1e3, ordered=False)
    run = ""
    try:
        with open(os.path.join(out, "machine.txt")) as f:
            kv = dict(l.split(": ", 1) for l in f.read().splitlines() if ": " in l)
        run = ": commit %s, started %s" % (kv.get("commit", "?").strip(), kv.get("started", "?").strip())
    except OSError:
        pass

    print("## Fitted here (from %s%s)\n" % (out, run))
    print("| parameter | value | from |\n|---|---|---|")
    print("| alpha (small round trip, tcp loopback) | %.1f µs | rt_bench, median 8 B p50 (READ, WRITE, FETCH_ADD) |" % here["alpha"])
    print("| bw (tcp loopback) | %.2f GB/s | rt_bench, slope from 8 B to the largest size |" % (here["bw"] / 1e3))
    print("| BW_add | %.1f GB/s | ps_apply vec_add, %d floats |" % (bw_add / 1e3, nmlp))
    print("| BW_adam | %.1f GB/s | ps_apply adam_apply, %d floats |" % (bw_adam / 1e3, nmlp))
    for name, (n, nt, tc) in models.items():
        print("| T_c %s | %.0f µs | compute p50, %s P=1 W=1 sync |" % (name, tc, name))

    print("\n## Model against this machine (tcp loopback, sync)\n")
    print("Step: left T_c = compute p50 of W=1, right T_c = compute p50 measured in that configuration (on 2 cores "
          "shared by W workers, the ps and the TCP progress threads, compute itself slows down; the model has no "
          "CPU-oversubscription term). Phases: predicted with the T_c of that configuration / measured p50.\n")
    print("| model | P | W | predicted step µs (T_c of W=1) | predicted (T_c of this W) | measured step p50 µs | "
          "measured step avg µs | predicted / measured p50 | pull pred / meas | push pred / meas | wait pred / meas |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (n, nt, tc) in models.items():
        m = dict(here, Tc=tc)
        for P in (1, 2):
            for W in (1, 2, 3, 4):
                c = an.get("%s P=%d W=%d sync" % (name, P, W))
                if not c:
                    continue
                ph = c["phases_us"]
                pr = step_sync(m, W, P, n, nt)
                pr2 = step_sync(dict(m, Tc=ph["compute_us"]["p50"]), W, P, n, nt)
                print("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f |" % (
                    name, P, W, pr["total"], pr2["total"], ph["total_us"]["p50"], ph["total_us"]["avg"],
                    pr2["total"] / ph["total_us"]["p50"],
                    pr2["pull"], ph["pull_us"]["p50"], pr2["push"], ph["push_us"]["p50"],
                    pr2["wait"], ph["wait_us"]["p50"]))

    print("\n## Prediction: 100 Gb/s InfiniBand, verbs (alpha %.1f µs, %.1f GB/s usable, %.1f µs per posted WR: "
          "assumed), same CPU per task as here\n" % (ib["alpha"], ib["bw"] / 1e3, ib["post"]))
    print("| model | W | sync step µs, P=1 | ps part of it | sync step µs, P=W/8 | best P | sync step µs at best P | "
          "TF global steps/s at best P | gradients/s at best P | async ps utilisation, P=1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (n, nt, tc) in models.items():
        m = dict(ib, Tc=tc)
        for W in (8, 64, 256):
            s1 = step_sync(m, W, 1, n, nt)
            pw = max(1, W // 8)
            s8 = step_sync(m, W, pw, n, nt)
            bp = best_p(m, W, n, nt)
            sb = step_sync(m, W, bp, n, nt)
            _, util = async_limit(m, W, 1, n, nt)
            print("| %s | %d | %.0f | %.0f%% | %.0f (P=%d) | %d | %.0f | %.0f | %.0f | %.2f |" % (
                name, W, s1["total"], 100 * ps_terms(s1) / s1["total"], s8["total"], pw, bp, sb["total"],
                1e6 / sb["total"], W * 1e6 / sb["total"], util))

    print("\n## Where the ps becomes the bottleneck (IB, verbs): the smallest W where the ps terms "
          "(link serialisation beyond one worker's own transfer, aggregation, apply, releases) exceed T_c\n")
    print("| model | sync: W at which ps terms > T_c (P=1) | shards to bring them back under T_c at 64 / 256 workers | async: W at which ps utilisation >= 1 (P=1) |")
    print("|---|---|---|---|")
    for name, (n, nt, tc) in models.items():
        m = dict(ib, Tc=tc)
        wsync = next((W for W in range(1, 4097) if ps_terms(step_sync(m, W, 1, n, nt)) > tc), None)
        need = [next((P for P in range(1, 1025) if ps_terms(step_sync(m, W, P, n, nt)) <= tc), None)
                for W in (64, 256)]
        wasync = next((W for W in range(1, 4097) if async_limit(m, W, 1, n, nt)[1] >= 1), None)
        print("| %s | %s | %s / %s | %s |" % (name, wsync, need[0], need[1], wasync))
    return 0


if __name__ == "__main__":
    sys.exit(main())
