#!/usr/bin/env python3
"""ab_report: the table of bench/step/ab.sh.

  ab_report.py OUT

Reads OUT/a<N>/step_bench.json and OUT/b<N>/step_bench.json (step_bench.py
--only anatomy).  Per configuration and build: the median over rounds of
each phase's p50 (wait, pull, push, pull+push, total), of tcp_rr's p50 of
that round, of the per-round ratio pull+push p50 / tcp_rr p50, and of the
steady-window TF global steps/s and gradients/s.  Standard library only.
"""
import glob
import json
import os
import statistics
import sys


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    rows = {}
    dirs = sorted(glob.glob(os.path.join(sys.argv[1], "[ab][0-9]*")))
    for d in dirs:
        path = os.path.join(d, "step_bench.json")
        if not os.path.isfile(path):
            continue
        try:
            R = json.load(open(path))
        except ValueError as e:
            print("ab_report: %s: %s" % (path, e), file=sys.stderr)
            return 2
        var = os.path.basename(d)[0]
        for r in R["anatomy"]:
            ph = r["result"]["phases_us"]
            rr = R["tcp_rr"].get("%s_p%d" % (r["model"], r["ps"]))
            w = r["result"].get("window") or {}
            cfg = "%s P=%d W=%d %s" % (r["model"], r["ps"], r["workers"], "sync" if r["sync"] else "async")
            rows.setdefault((cfg, var), []).append({
                "wait": ph["wait_us"]["p50"], "pull": ph["pull_us"]["p50"], "push": ph["push_us"]["p50"],
                "pp": ph["pullpush_us"]["p50"], "total": ph["total_us"]["p50"],
                "rr": rr["p50_us"] if rr else None,
                "ratio": ph["pullpush_us"]["p50"] / rr["p50_us"] if rr else None,
                "gps": w.get("global_steps_per_s"), "grads": w.get("gradients_per_s")})
    if not rows:
        print("ab_report: no step_bench.json under %s/[ab]N" % sys.argv[1], file=sys.stderr)
        return 2
    print("| config | build | rounds | wait | pull | push | pull+push | total | tcp_rr | ratio | TF global steps/s | gradients/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (cfg, var), L in sorted(rows.items()):
        def m(k, nd=1):
            v = [x[k] for x in L if x[k] is not None]
            return "-" if not v else "%.*f" % (nd, statistics.median(v))
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            cfg, var.upper(), len(L), m("wait"), m("pull"), m("push"), m("pp"), m("total"), m("rr"),
            m("ratio", 2), m("gps", 0), m("grads", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
