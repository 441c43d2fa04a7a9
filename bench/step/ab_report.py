#!/usr/bin/env python3
"""ab_report: the table of bench/step/ab.sh.

  ab_report.py OUT

Reads OUT/a<N>/step_bench.json and OUT/b<N>/step_bench.json (step_bench.py
--only anatomy; N = the round).  Per configuration and build, the median
over that configuration's runs (one per round with ab.sh's usual REPS=1)
of each run's phase p50s (wait, pull, push, pull+push, total), of its own
tcp_rr reference's p50 (measured right after that run), of its paired
ratios (pull+push p50 over that run's own references: step_bench's
vs_tcp_rr_p50 and vs_tcp_step_p50, with [min..max] over the runs), and of
its steady-window TF global steps/s and gradients/s.  The runs column
gives the runs and, in brackets, the rounds they came from.  Every
failure is listed below the table, by run and part: a run that failed is
missing from the count; a run whose plain-TCP reference failed is in it,
its paired ratio to that reference is missing (the ratio cell then says
over how many runs it is).  A step_bench.json
from before every run had its own references (45b22a6) has no paired
ratio: those rows print "-".  Standard library only.
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
    rows, failures, missing = {}, [], []
    outs, kept, unknown = set(), set(), 0  # runs not in the table / in it without a part / not recorded
    dirs = sorted(d for d in glob.glob(os.path.join(sys.argv[1], "[ab][0-9]*")) if os.path.isdir(d))
    for d in dirs:
        path = os.path.join(d, "step_bench.json")
        if not os.path.isfile(path):
            missing.append(d)
            continue
        try:
            R = json.load(open(path))
        except ValueError as e:
            print("ab_report: %s: %s" % (path, e), file=sys.stderr)
            return 2
        var = os.path.basename(d)[0]
        failures += ["%s: %s" % (os.path.basename(d), f) for f in R.get("failures", [])]
        if "failed" in R:
            outs |= {(d, f["run"]) for f in R["failed"] if not f["run_in_tables"]}
            kept |= {(d, f["run"]) for f in R["failed"] if f["run_in_tables"]}
        else:
            unknown += len(R.get("failures", []))
        for r in R["anatomy"]:
            res = r["result"]
            ph = res["phases_us"]
            rr = res.get("tcp_rr")
            w = res.get("window") or {}
            cfg = "%s P=%d W=%d %s" % (r["model"], r["ps"], r["workers"], "sync" if r["sync"] else "async")
            rows.setdefault((cfg, var), []).append({
                "round": os.path.basename(d),
                "wait": ph["wait_us"]["p50"], "pull": ph["pull_us"]["p50"], "push": ph["push_us"]["p50"],
                "pp": ph["pullpush_us"]["p50"], "total": ph["total_us"]["p50"],
                "rr": rr["p50_us"] if rr else None,
                "ratio": res.get("vs_tcp_rr_p50"), "ratio_step": res.get("vs_tcp_step_p50"),
                "gps": w.get("global_steps_per_s"), "grads": w.get("gradients_per_s")})
    if not rows:
        print("ab_report: no step_bench.json under %s/[ab]N" % sys.argv[1], file=sys.stderr)
        return 2
    print("Medians over each configuration's runs (µs); tcp_rr = each run's own reference; paired ratio = each "
          "run's pull+push p50 over its own reference, median [min..max] over the runs.\n")
    print("| config | build | runs (rounds) | wait | pull | push | pull+push | total | tcp_rr | paired ratio to tcp_rr "
          "| paired ratio to step shape | TF global steps/s | gradients/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (cfg, var), L in sorted(rows.items()):
        def v(k):
            return [x[k] for x in L if x[k] is not None]

        def m(k, nd=1):
            x = v(k)
            return "-" if not x else "%.*f" % (nd, statistics.median(x))

        def span(k):
            x = v(k)
            if not x:
                return "-"
            s = "%.2f [%.2f..%.2f]" % (statistics.median(x), min(x), max(x))
            return s if len(x) == len(L) else s + " (%d runs)" % len(x)
        print("| %s | %s | %d (%d) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            cfg, var.upper(), len(L), len({x["round"] for x in L}), m("wait"), m("pull"), m("push"), m("pp"),
            m("total"), m("rr"), span("ratio"), span("ratio_step"), m("gps", 0), m("grads", 0)))
    for d in missing:
        print("\nab_report: %s: no step_bench.json (that round's step_bench did not finish)" % d)
    if failures:
        kept -= outs
        print("\nFAILED: %d failure(s) (runs/parts named below): %d run(s) not in the table, %d run(s) in it without "
              "the part that failed%s" % (len(failures), len(outs), len(kept),
                                               "; %d failure(s) from files that predate the record of whether "
                                               "the run is in the table" % unknown if unknown else ""))
        for f in failures:
            print("- " + f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
