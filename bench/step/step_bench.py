#!/usr/bin/env python3
"""step_bench: distributed-training benchmarks of rdmaps (issue 5, items 1-3, 5).

Runs local clusters (ps and worker tasks started by hand on 127.0.0.1, each on
a port the kernel picked free, --transport=tcp unless --transport says other;
the workers --worker_nice nicer than the ps tasks, as `rdmaps launch` starts
them) with per-worker --metrics files, and reports:

  anatomy     per step wait / pull / compute / push (and their sum), min p50
              avg stdev p99 max, for each (model, ps, workers, sync|async);
              gradients/s and TF global steps/s in a steady window.
  transport   the pull+push of a step against tcp_rr, a plain TCP request/
              response of the same bytes measured in the same run (the
              issue's reference), and against tcp_rr --mode step, plain TCP
              in the shape of the step (push, untimed release, pull, then an
              idle gap as long as the run's compute p50); a sync run of W > 1
              workers also against both with W clients at once on one
              server (tcp_rr --clients W).
  convergence validation cross entropy of the chief's parameter snapshots
              against wall time, sync against async; time to a target.
  stragglers  one worker sleeping --straggler_delay_ms per step: sync R=W,
              sync R=W-1 (one backup), async.

Warm-up: per worker, steps are dropped until WARM_STEPS steps are done or
WARM_S seconds have passed since that worker's first step began, whichever
comes first; the count dropped is in every table.  Every later step is kept
(no tail dropped).  Statistics in double (Python floats).  Percentiles are
nearest-rank.  Every run leaves its raw files (metrics, logs, snapshots) and a
summary JSON in OUT/runs/<name>/.

Only the Python standard library is used.
"""
import argparse
import json
import math
import os
import re
import socket
import subprocess
import sys
import time


def die(msg):
    """bad input: say what is wrong, exit 2"""
    print(msg, file=sys.stderr)
    sys.exit(2)

WARM_STEPS = 10
WARM_S = 0.2
PHASES = ("wait_us", "pull_us", "compute_us", "push_us")


def free_ports(a, n):
    """n distinct free ports on 127.0.0.1, picked as `rdmaps launch` picks
    them (`rdmaps ports`: below the ephemeral range, so that no connect()
    on the machine takes one as its local port before the ps binds it)"""
    r = subprocess.run([a.rdmaps, "ports", str(n)], capture_output=True, text=True)
    if r.returncode == 0:
        return [int(x) for x in r.stdout.split()]
    if r.returncode != 2:  # it knows the command but found no ports
        raise Failed("rdmaps ports %d: %s" % (n, r.stderr.strip()))
    # exit 2: a build from before `rdmaps ports` (bench/step/ab.sh compares
    # old builds): ports the kernel picks, held open together so they differ
    socks, got = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
            got.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return got


def pct(sorted_v, p):
    """nearest-rank percentile of a sorted list"""
    n = len(sorted_v)
    i = int(math.ceil(p * n)) - 1
    return sorted_v[min(max(i, 0), n - 1)]


def stats(v):
    if not v:
        return None
    s = sorted(v)
    n = len(s)
    avg = sum(s) / n
    sd = math.sqrt(sum((x - avg) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "min": s[0], "p50": pct(s, 0.5), "avg": avg, "stdev": sd,
            "p99": pct(s, 0.99), "max": s[-1]}


class Failed(Exception):
    pass


def shard_bytes(n):
    """bytes a worker moves per step for a shard of n floats (src/worker/worker.c):
    pull = the shard's floats (READ piece by piece straight into the model
    vector) + the fenced 8 B version READ; push = the floats + the 64 B slot
    header + the 8 B FETCH_ADD."""
    return n * 4 + 8, n * 4 + 64 + 8


# the ps's end-of-run sync barrier line (src/ps/shard.c barrier_summary): per
# update, its first accepted gradient to its R-th, then the R-th to every
# release posted, as the ps's clock saw them (us)
_BARRIER = re.compile(r"sync barrier over \d+ update\(s\)[^:]*: the last of R = \d+ gradients came (\d+) us after "
                      r"the first \(p50; p99 (\d+), max (\d+)\); summing, the optimizer and the releases took "
                      r"(\d+) us \(p50; p99 (\d+), max (\d+)\)")
# the worker's last line, "validation cross entropy = %g": a diverged run
# prints nan, -nan (glibc), inf or -inf, which float() reads
_VAL_CE = re.compile(r"validation cross entropy = ([-+]?(?:nan|inf(?:inity)?|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))",
                     re.I)


def run_cluster(a, name, model, P, W, sync, R=0, steps=200, delay_ms=0,
                strag_task=0, snap_every=0, seed=1):
    d = os.path.join(a.out, "runs", name)
    os.makedirs(d, exist_ok=True)
    ports = free_ports(a, P + W)
    ps = ",".join("127.0.0.1:%d" % p for p in ports[:P])
    wk = ",".join("127.0.0.1:%d" % p for p in ports[P:])
    common = ["--ps_hosts=" + ps, "--worker_hosts=" + wk, "--model=" + model,
              "--train_steps=%d" % steps, "--data_dir=" + a.data_dir,
              "--transport=" + a.transport, "--seed=%d" % seed,
              "--log_every=1000000000", "--timeout=%d" % a.task_timeout] + a.rdmaps_flag
    if sync:
        common.append("--sync_replicas=True")
        if R:
            common.append("--replicas_to_aggregate=%d" % R)
    if delay_ms:
        common += ["--straggler_delay_ms=%d" % delay_ms, "--straggler_task=%d" % strag_task]
    procs = []
    t_launch = time.monotonic()
    for k in range(P):
        f = open(os.path.join(d, "ps%d.log" % k), "w")
        procs.append(("ps%d" % k, subprocess.Popen(
            [a.rdmaps, "--job_name=ps", "--task_index=%d" % k] + common,
            stdout=f, stderr=subprocess.STDOUT), f))
    for k in range(W):
        extra = ["--metrics=" + os.path.join(d, "metrics.w%d.json" % k)]
        if k == 0 and snap_every:
            extra += ["--snapshot_file=" + os.path.join(d, "snap.bin"),
                      "--snapshot_every=%d" % snap_every]
        f = open(os.path.join(d, "worker%d.log" % k), "w")
        procs.append(("worker%d" % k, subprocess.Popen(
            [a.rdmaps, "--job_name=worker", "--task_index=%d" % k] + common + extra,
            stdout=f, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.nice(a.worker_nice)) if a.worker_nice else None), f))
    deadline = time.monotonic() + a.task_timeout + 30
    bad = []
    for nm, p, f in procs:
        try:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.terminate()
            try:
                rc = p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            bad.append("%s timed out" % nm)
        f.close()
        if rc:
            bad.append("%s exited %d" % (nm, rc))
    if bad:
        # stop what is left (only the processes this run started)
        for nm, p, f in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        raise Failed("%s (logs in %s)" % ("; ".join(bad), d))
    info = {"name": name, "model": model, "ps": P, "workers": W, "sync": bool(sync),
            "replicas": (R or W) if sync else None, "train_steps": steps,
            "straggler_delay_ms": delay_ms, "straggler_task": strag_task if delay_ms else None,
            "transport": a.transport, "wall_s_launch_to_exit": time.monotonic() - t_launch,
            "dir": d}
    shards = []
    for k in range(P):
        txt = open(os.path.join(d, "ps%d.log" % k)).read()
        m = re.search(r"serving (\d+) floats", txt)
        shards.append(int(m.group(1)) if m else None)
        m = re.search(r"done after ([\d.]+) s: global step (\d+), (\d+) updates, (\d+) gradients accepted, (\d+) dropped", txt)
        if m and k == 0:
            info["ps0_done"] = {"serve_s": float(m.group(1)), "global_step": int(m.group(2)),
                                "updates": int(m.group(3)), "accepted": int(m.group(4)),
                                "dropped": int(m.group(5))}
        m = _BARRIER.search(txt)
        if m and k == 0:
            v = [float(x) for x in m.groups()]
            info["ps0_barrier"] = dict(zip(("spread_p50_us", "spread_p99_us", "spread_max_us",
                                            "settle_p50_us", "settle_p99_us", "settle_max_us"), v))
    info["shard_floats"] = shards
    if None not in shards:
        pb = [shard_bytes(n) for n in shards]
        info["pull_bytes_per_step"] = sum(x[0] for x in pb)
        info["push_bytes_per_step"] = sum(x[1] for x in pb)
    ce = []
    for k in range(W):
        txt = open(os.path.join(d, "worker%d.log" % k)).read()
        m = _VAL_CE.search(txt)
        ce.append(float(m.group(1)) if m else None)
    info["final_val_ce"] = ce
    info["metrics"] = [os.path.join(d, "metrics.w%d.json" % k) for k in range(W)]
    return info


# C's printf("%g") writes a non-finite double as nan, -nan, inf or -inf,
# which JSON (and Python's json) does not accept; Python's json reads NaN,
# Infinity and -Infinity
_NONFINITE = re.compile(r"(?<=[:\[,])(\s*)(-?)(nan|inf)\b", re.I)


def loads_c(line):
    """json.loads of a line a C program wrote with %g (a worker's --metrics,
    eval_snapshots): a diverged run's nan / inf are read as float('nan') /
    float('inf'), so the run is kept and can be shown as diverged"""
    return json.loads(_NONFINITE.sub(
        lambda m: m.group(1) + ("NaN" if m.group(3).lower() == "nan" else m.group(2) + "Infinity"), line))


def finite_json(x):
    """x with every non-finite float (a diverged run's nan / inf) replaced by
    None: the files step_bench and report.py write are strict JSON (RFC 8259
    has no NaN or Infinity, which Python's json writes by default); where a
    run diverged is in its result.diverged"""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_json(v) for v in x]
    return x


def dump(x, f, **kw):
    """json.dump as strict JSON: non-finite numbers written as null"""
    json.dump(finite_json(x), f, allow_nan=False, **kw)


def dumps(x, **kw):
    return json.dumps(finite_json(x), allow_nan=False, **kw)


def first_nonfinite(per):
    """where a run diverged: the first step (by worker) whose loss is not
    finite, or None"""
    for k, rows in enumerate(per):
        for r in rows:
            # (the worker writes a non-finite loss as null; older files: nan)
            if "loss" in r and (r["loss"] is None or not math.isfinite(r["loss"])):
                return {"worker": k, "local_step": r["local_step"], "loss": repr(r["loss"])}
    return None


def load_steps(info):
    per = []
    for k, path in enumerate(info["metrics"]):
        rows = []
        with open(path) as f:
            for ln, line in enumerate(f, 1):
                try:
                    r = loads_c(line)
                except ValueError:
                    raise Failed("%s:%d: not a JSON line" % (path, ln))
                for key in PHASES + ("t", "global_step", "local_step"):
                    if key not in r:
                        raise Failed("%s:%d: no %s" % (path, ln, key))
                r["total_us"] = sum(r[p] for p in PHASES)
                r["t_begin"] = r["t"] - r["total_us"] * 1e-6
                rows.append(r)
        if not rows:
            raise Failed("%s: no steps" % path)
        per.append(rows)
    return per


def warm_split(rows):
    """index of the first kept step: WARM_STEPS done or WARM_S elapsed"""
    t0 = rows[0]["t_begin"]
    for i, r in enumerate(rows):
        if i >= WARM_STEPS or r["t_begin"] - t0 >= WARM_S:
            return i
    return len(rows)


def analyze(info):
    per = load_steps(info)
    kept, dropped, ends, t_warm = [], 0, [], []
    by_worker = []
    for rows in per:
        i = warm_split(rows)
        dropped += i
        kept.append(rows[i:])
        t_warm.append(rows[i - 1]["t"] if i > 0 else rows[0]["t_begin"])
        ends.append(rows[-1]["t"])
    allk = [r for rows in kept for r in rows]
    if not allk:
        raise Failed("every step was warm-up; run more steps")
    out = {"warmup": {"steps": WARM_STEPS, "seconds": WARM_S, "dropped": dropped,
                      "kept": len(allk)}}
    out["phases_us"] = {p: stats([r[p] for r in allk]) for p in PHASES + ("total_us",)}
    out["phases_us"]["pullpush_us"] = stats([r["pull_us"] + r["push_us"] for r in allk])
    if info.get("straggler_delay_ms"):
        st = info["straggler_task"]
        fast = [r for k, rows in enumerate(kept) if k != st for r in rows]
        slow = [r for k, rows in enumerate(kept) if k == st for r in rows]
        out["fast_total_us"] = stats([r["total_us"] for r in fast])
        out["straggler_total_us"] = stats([r["total_us"] for r in slow])
    # steady window: every worker warmed up, none finished yet
    T0, T1 = max(t_warm), min(ends)
    allr = [r for rows in per for r in rows]
    if T1 > T0:
        grads = sum(1 for r in allr if T0 < r["t"] <= T1)
        g0 = max([r["global_step"] for r in allr if r["t"] <= T0] or [0])
        g1 = max(r["global_step"] for r in allr if r["t"] <= T1)
        out["window"] = {"seconds": T1 - T0, "gradients": grads,
                         "gradients_per_s": grads / (T1 - T0),
                         "global_steps": g1 - g0, "global_steps_per_s": (g1 - g0) / (T1 - T0)}
    else:
        out["window"] = None  # a worker finished before every worker was warm
    t_start = min(rows[0]["t_begin"] for rows in per)
    out["t_start"] = t_start
    out["start_skew_s"] = max(rows[0]["t_begin"] for rows in per) - t_start
    out["train_wall_s"] = max(ends) - t_start
    # whole run, warm-up included: first step begun to last step ended
    gfinal = info.get("ps0_done", {}).get("global_step")
    out["run"] = {"seconds": out["train_wall_s"], "gradients": len(allr),
                  "gradients_per_s": len(allr) / out["train_wall_s"],
                  "global_steps": gfinal,
                  "global_steps_per_s": gfinal / out["train_wall_s"] if gfinal is not None else None}
    out["local_steps"] = [len(rows) for rows in per]
    # a loss of nan / inf: the run is kept (its step times are real) and
    # marked, so the reports can say it diverged
    out["diverged"] = first_nonfinite(per)
    return out


def evaluate(a, info, t_start):
    path = os.path.join(info["dir"], "snap.bin")
    hid = [] if info["model"] == "lstm" else ["--hidden_units", "100"]
    r = subprocess.run([a.eval_bin, "--model", info["model"], "--data_dir", a.data_dir] + hid + [path],
                       capture_output=True, text=True)
    if r.returncode:
        raise Failed("%s: exit %d: %s" % (path, r.returncode, r.stderr.strip()))
    try:
        pts = [loads_c(l) for l in r.stdout.splitlines() if l.strip()]
    except ValueError as e:
        raise Failed("%s: eval_snapshots printed a line that is not JSON: %s" % (path, e))
    if not pts:
        raise Failed("%s: eval_snapshots printed no validation point" % path)
    for p in pts:
        p["wall_s"] = p["t"] - t_start
    with open(os.path.join(info["dir"], "val.json"), "w") as f:
        for p in pts:
            f.write(dumps(p) + "\n")
    os.remove(path)  # parameter snapshots are large; val.json keeps what they gave
    return pts


def tcp_ref(a, req, resp, label, mode="rr", gap_us=0, clients=1):
    js = os.path.join(a.out, "tcp_rr%s%s.%s.json" % ("" if mode == "rr" else "_" + mode,
                                                    "" if clients == 1 else "_c%d" % clients, label))
    # --budget-ms: a reference with a long gap (lstm's ~15 ms) ends after
    # about 5 s instead of rr_iters samples (per client)
    r = subprocess.run([a.tcp_rr, "--req", str(req), "--resp", str(resp), "--mode", mode, "--iters", str(a.rr_iters),
                        "--gap-us", str(gap_us), "--budget-ms", "5000", "--clients", str(clients),
                        "--json", js, "--label", label],
                       capture_output=True, text=True)
    if r.returncode:
        raise Failed("exit %d: %s" % (r.returncode, r.stderr.strip()))
    try:
        with open(js) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Failed("%s: %s" % (js, e))


def save(info, res):
    info = dict(info)
    info["result"] = res
    with open(os.path.join(info["dir"], "summary.json"), "w") as f:
        dump(info, f, indent=1)
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--data_dir", default="data/mnist")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--transport", default="tcp", choices=["tcp", "rdma", "auto"])
    ap.add_argument("--only", default="anatomy,convergence,stragglers",
                    help="comma list of anatomy, convergence, stragglers")
    ap.add_argument("--task_timeout", type=int, default=120)
    ap.add_argument("--grid", default="",
                    help="anatomy configurations instead of the built-in grid: comma list of "
                         "MODEL:P:W:REPS, e.g. mlp:1:1:3,mlp:1:2:3")
    ap.add_argument("--steps", type=int, default=0,
                    help="sync global steps per anatomy run (default: 600 mlp / 100 lstm, quick 300 / 40)")
    ap.add_argument("--rdmaps_flag", action="append", default=[],
                    help="extra flag for every ps and worker, e.g. --rdmaps_flag=--tcp_spin_us=50 (repeatable; "
                         "recorded in the JSON)")
    ap.add_argument("--worker_nice", type=int, default=5, choices=range(0, 20), metavar="0..19",
                    help="the workers run this much nicer than the ps tasks, as `rdmaps launch --worker_nice` "
                         "(default 5, launch's) starts them; 0 = the same (recorded in the JSON)")
    a = ap.parse_args()
    a.rdmaps = os.path.join(a.build, "src/cli/rdmaps")
    a.eval_bin = os.path.join(a.build, "bench/step/eval_snapshots")
    a.tcp_rr = os.path.join(a.build, "bench/step/tcp_rr")
    for b in (a.rdmaps, a.eval_bin, a.tcp_rr):
        if not os.access(b, os.X_OK):
            die("step_bench: %s not built (cmake --build %s)" % (b, a.build))
    if not os.path.isdir(a.data_dir):
        die("step_bench: --data_dir %s: no such directory" % a.data_dir)
    a.rr_iters = 500 if a.quick else 2000
    os.makedirs(a.out, exist_ok=True)
    only = set(a.only.split(","))
    unknown = only - {"anatomy", "convergence", "stragglers"}
    if unknown:
        die("step_bench: --only: unknown part(s) %s" % ",".join(sorted(unknown)))
    results = {"config": {"quick": a.quick, "transport": a.transport, "rdmaps_flags": a.rdmaps_flag,
                          "worker_nice": a.worker_nice, "warmup_steps": WARM_STEPS,
                          "warmup_s": WARM_S, "host": os.uname().nodename, "ncpu": os.cpu_count(),
                          "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
               "anatomy": [], "tcp_rr": {}, "tcp_rr_step": {}, "convergence": [], "stragglers": []}
    # every failure names its run and the part that failed, and says whether
    # the run is still in the tables: a run whose own figures are valid but
    # whose plain-TCP reference or final evaluation failed is kept, with
    # that part in result.missing; a run without valid figures of its own is
    # in no table.  failures: the messages (as before); failed: the same,
    # one record each
    failures, failed = [], []

    def attempt(run, part, kept, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except Failed as e:
            msg = "%s: %s failed (%s): %s" % (
                run, part, "the run is kept in the tables without it" if kept else "the run is in no table", e)
            print("FAILED " + msg, flush=True)
            failures.append(msg)
            failed.append({"run": run, "part": part, "run_in_tables": kept, "why": str(e)})
            return None

    # ---- 1. step anatomy (+ throughput window, + transport reference)
    if "anatomy" in only:
        # (model, ps, workers, repetitions); an lstm step computes ~40x longer
        # than an mlp step, so it gets fewer steps and repetitions
        if a.quick:
            grid = [("mlp", P, W, 2) for P in (1, 2) for W in (1, 2, 4)] + [("lstm", 1, W, 1) for W in (1, 2)]
            steps = {"mlp": 300, "lstm": 40}
        else:
            grid = [("mlp", P, W, 3) for P in (1, 2) for W in (1, 2, 3, 4)] + \
                   [("lstm", P, W, 1) for P in (1, 2) for W in (1, 2, 3, 4)]
            steps = {"mlp": 600, "lstm": 100}
        if a.grid:
            grid = []
            for item in a.grid.split(","):
                f = item.split(":")
                if len(f) != 4 or f[0] not in ("mlp", "lstm") or not all(x.isdigit() and int(x) > 0 for x in f[1:]):
                    die("step_bench: --grid: '%s' is not MODEL:P:W:REPS (model mlp or lstm, P W REPS > 0)" % item)
                grid.append((f[0], int(f[1]), int(f[2]), int(f[3])))
        if a.steps < 0:
            die("step_bench: --steps must be > 0")
        if a.steps:
            steps = {"mlp": a.steps, "lstm": a.steps}
        # sync and async of one config run back to back (a pair), the order
        # alternating by repetition, so that background load hits both alike
        order = sorted(((r, m, P, W) for (m, P, W, n) in grid for r in range(n)), key=lambda x: x[0])
        for rep, model, P, W in order:
            for sync in ((1, 0) if rep % 2 == 0 else (0, 1)):
                name = "anat_%s_p%d_w%d_%s_r%d" % (model, P, W, "sync" if sync else "async", rep)
                print("== %s" % name, flush=True)
                # async: train_steps counts every gradient; give it the same
                # number of gradients as the sync run (W per global step)
                n = steps[model] if sync else steps[model] * W
                info = attempt(name, "run", False, run_cluster, a, name, model, P, W, sync, steps=n)
                if not info:
                    continue
                info["rep"] = rep
                res = attempt(name, "reading its metrics", False, analyze, info)
                if not res:
                    continue
                res["missing"] = []
                key = "%s_p%d" % (model, P)
                # The plain-TCP references, measured right after every run
                # (the machine's state drifts between runs by more than the
                # effects measured), so each run has its own paired ratio.
                # The step-shaped one idles between its steps as long as
                # this run computed (its compute p50): an idle gap changes
                # plain TCP's push and pull here by 2-3x either way
                # (docs/benchmarks.md, "The idle gap").
                if a.transport == "tcp" and "push_bytes_per_step" in info:
                    pb, qb = info["push_bytes_per_step"], info["pull_bytes_per_step"]
                    gap = int(round(res["phases_us"]["compute_us"]["p50"]))
                    rr = attempt(name, "tcp_rr reference", True, tcp_ref, a, pb, qb, name)
                    rs = attempt(name, "tcp_rr --mode step reference", True, tcp_ref, a, pb, qb, name, "step", gap)
                    # results["tcp_rr"] / ["tcp_rr_step"]["<model>_p<P>"]:
                    # the references of the first run of that model and P
                    # (kept for readers of older files; the first such run
                    # is one configuration's, W=1 sync in the built-in
                    # grid).  Every ratio of the reports uses each run's
                    # own, result.tcp_rr / result.tcp_rr_step.
                    if not rr:
                        res["missing"].append("tcp_rr")
                    if not rs:
                        res["missing"].append("tcp_rr_step")
                    if rr:
                        results["tcp_rr"].setdefault(key, rr)
                        res["tcp_rr"] = rr
                        res["vs_tcp_rr_p50"] = res["phases_us"]["pullpush_us"]["p50"] / rr["p50_us"]
                    if rs:
                        results["tcp_rr_step"].setdefault(key, rs)
                        res["tcp_rr_step"] = rs
                        res["vs_tcp_step_p50"] = res["phases_us"]["pullpush_us"]["p50"] / rs["p50_us"]
                    # A sync run of W > 1 workers also against W plain TCP
                    # clients at once on one server (tcp_rr --clients W):
                    # the same bytes under the same concurrency, W transfers
                    # sharing the 2 cores with one server, and in the step
                    # shape released together as the barrier releases the
                    # workers.  Measured for sync runs only (the target is
                    # the sync step's), reported beside the one-client ones.
                    if sync and W > 1:
                        rw = attempt(name, "tcp_rr --clients %d reference" % W, True, tcp_ref, a, pb, qb, name,
                                     "rr", 0, W)
                        sw = attempt(name, "tcp_rr --mode step --clients %d reference" % W, True, tcp_ref, a, pb,
                                     qb, name, "step", gap, W)
                        for k, q in (("tcp_rr_w", rw), ("tcp_rr_step_w", sw)):
                            if q:
                                res[k] = q
                                res["vs_%s_p50" % k] = res["phases_us"]["pullpush_us"]["p50"] / q["p50_us"]
                            else:
                                res["missing"].append(k)
                results["anatomy"].append(save(info, res))

    # ---- 2. convergence: validation CE against wall time, sync vs async
    if "convergence" in only:
        reps = 1 if a.quick else 3
        W = 2
        for rep in range(reps):
            for sync in ((1, 0) if rep % 2 == 0 else (0, 1)):
                name = "conv_mlp_p1_w%d_%s_r%d" % (W, "sync" if sync else "async", rep)
                print("== %s" % name, flush=True)
                steps = 400 if sync else 400 * W
                info = attempt(name, "run", False, run_cluster, a, name, "mlp", 1, W, sync, steps=steps,
                               snap_every=10, seed=1 + rep)
                if not info:
                    continue
                res = attempt(name, "reading its metrics", False, analyze, info)
                if not res:
                    continue
                # a convergence run's figures are its validation points:
                # without them it is in no table
                pts = attempt(name, "eval_snapshots", False, evaluate, a, info, res["t_start"])
                if pts is None:
                    continue
                res["missing"] = []
                res["val"] = pts
                results["convergence"].append(save(info, res))

    # ---- 3. stragglers: W=3, worker 2 sleeps D ms per step
    if "stragglers" in only:
        W, D = 3, 20
        steps = 300 if a.quick else 600
        for label, sync, R in (("sync_R3", 1, 3), ("sync_R2_backup", 1, 2), ("async", 0, 0)):
            name = "strag_mlp_p1_w%d_d%d_%s" % (W, D, label)
            print("== %s" % name, flush=True)
            n = steps if sync else steps * W
            info = attempt(name, "run", False, run_cluster, a, name, "mlp", 1, W, sync, R=R, steps=n, delay_ms=D,
                           strag_task=W - 1, snap_every=1000000)
            if not info:
                continue
            res = attempt(name, "reading its metrics", False, analyze, info)
            if not res:
                continue
            # its step times and rates stand without the final evaluation
            pts = attempt(name, "eval_snapshots", True, evaluate, a, info, res["t_start"])
            res["missing"] = [] if pts else ["final_val"]
            if pts:
                res["final_val"] = pts[-1]
            info["label"] = label
            results["stragglers"].append(save(info, res))

    results["failures"] = failures
    results["failed"] = failed
    with open(os.path.join(a.out, "step_bench.json"), "w") as f:
        dump(results, f, indent=1)
    print("step_bench: wrote %s (%d failure(s))" % (os.path.join(a.out, "step_bench.json"), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
