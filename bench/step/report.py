#!/usr/bin/env python3
"""report: tables (perftest-style text, markdown) and gnuplot PNGs from one
bench/run.sh output directory.

  report.py OUT [--target CE]

Reads OUT/step_bench.json (bench/step/step_bench.py), OUT/ps_apply.json
(bench/ps_apply/ps_apply_bench --json) when present, and the raw metrics
files of the runs.  Writes OUT/report.txt, OUT/report.md, OUT/report.json
(the derived figures) and OUT/plots/*.png.  Every figure is a ratio or a
statistic of samples measured in that one directory's run.

report.json, "transport" (one entry per configuration): pullpush_p50_us is
pooled over the configuration's runs; tcp_rr_p50_us / tcp_step_p50_us are
the references measured right after its own first run (reference_run /
reference_step_run name it) and ratio / ratio_step the pooled p50 over
them; paired_ratio / paired_ratio_step list each run's pull+push p50 over
its own references, *_median their median: the paired figures.
"""
import json
import math
import os
import subprocess
import sys


def die(msg):
    """bad input: say what is wrong, exit 2"""
    print(msg, file=sys.stderr)
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_bench as sb  # noqa: E402


def f1(x, nd=1):
    return "-" if x is None else ("%.*f" % (nd, x))


def finite(x):
    """a number that is not nan / inf; step_bench writes those as null
    (older step_bench.json files as NaN / Infinity, which json reads)"""
    return x is not None and math.isfinite(x)


def ce_cell(x, nd=1):
    """a validation figure that was measured: its value, or 'not finite'
    (a diverged run's nan / inf, written as null)"""
    return ("%.*f" % (nd, x)) if finite(x) else "not finite"


def med(v):
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def span(v):
    """median [min..max] of a list of ratios, or - when empty"""
    return "%.2f [%.2f..%.2f]" % (med(v), min(v), max(v)) if v else "-"


def first_ref(R, g, kind):
    """the plain-TCP reference (kind "tcp_rr" or "tcp_rr_step") of the
    configuration's own first run that has one, and that run's name.  A
    step_bench.json from before every run got its own references (45b22a6)
    has only R[kind]["<model>_p<P>"], the first run of that model and P:
    then that one, named by its label (another configuration's run).  In a
    newer file, a configuration whose every run's reference failed has
    none (not another configuration's)."""
    for r in sorted(g["runs"], key=lambda r: r.get("rep", 0)):
        q = r["result"].get(kind)
        if q:
            return q, r["name"]
    if any(r["result"].get(kind) for r in R.get("anatomy", [])):
        return None, None  # per-run references, none of this configuration's
    q = R.get(kind, {}).get("%s_p%d" % (g["key"][0], g["key"][1]))
    if q:
        return q, q.get("label", "first run of %s P=%d" % (g["key"][0], g["key"][1]))
    return None, None


def refname(g, name):
    """how a table names the run a reference came from: rN when it is the
    configuration's own, else the whole run name"""
    own = {r["name"]: r.get("rep", 0) for r in g["runs"]}
    return "r%d" % own[name] if name in own else name


def cmedian(reached, censored):
    """median of times where some runs never reached the target: reached =
    the times of those that did; censored = for each that did not, the last
    time it was seen not there (its time is later).  Returns (median, None),
    or (None, why) when the median is censored or undetermined."""
    v, n = sorted(reached), len(reached) + len(censored)
    if n == 0:
        return None, "no runs"
    hi = n // 2  # the upper middle rank (0-based)
    if hi >= len(v):
        return None, "not reached by the median run"
    m_ = v[hi] if n % 2 else (v[hi - 1] + v[hi]) / 2
    # a censored run ranks after v[hi] only if it was seen not there at v[hi]
    if any(c < v[hi] for c in censored):
        return None, "undetermined: a run ended short of the target before %.3f s" % v[hi]
    return m_, None


def cfgname(r):
    return "%s P=%d W=%d %s" % (r["model"], r["ps"], r["workers"], "sync" if r["sync"] else "async")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    out = sys.argv[1]
    target = 800.0
    if len(sys.argv) >= 4 and sys.argv[2] == "--target":
        try:
            target = float(sys.argv[3])
        except ValueError:
            die("report: --target %s: expected a number" % sys.argv[3])
    path = os.path.join(out, "step_bench.json")
    try:
        R = json.load(open(path))
    except (OSError, ValueError) as e:
        die("report: %s: %s" % (path, e))
    pa = None
    pap = os.path.join(out, "ps_apply.json")
    if os.path.exists(pap):
        pa = []
        for ln, line in enumerate(open(pap), 1):  # JSON lines
            if line.strip():
                try:
                    pa.append(json.loads(line))
                except ValueError as e:
                    die("report: %s:%d: %s" % (pap, ln, e))
    rtb = None
    rtp = os.path.join(out, "rt_bench.json")
    if os.path.exists(rtp):
        try:
            rtb = json.load(open(rtp))
        except ValueError as e:
            die("report: %s: %s" % (rtp, e))
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    txt, md, derived = [], [], {"target_val_ce": target}
    c = R["config"]
    head = ("rdmaps bench: transport %s, %s mode, host %s (%d CPUs), started %s UTC. Warm-up: per worker the "
            "first %d steps or the first %.1f s, whichever ends first, are dropped (counts below); every later "
            "step is kept. Times in microseconds; statistics in double; percentiles nearest-rank."
            % (c["transport"], "quick" if c["quick"] else "full", c["host"], c["ncpu"], c["started_utc"],
               c["warmup_steps"], c["warmup_s"]))
    if "worker_nice" in c:
        head += " Workers at nice +%d from the ps tasks (--worker_nice)." % c["worker_nice"]
    if c.get("rdmaps_flags"):
        head += " Extra rdmaps flags on every task: %s." % " ".join(c["rdmaps_flags"])
    txt.append(head)
    md.append(head + "\n")
    # what failed, first, by run and part: a run that failed (or whose
    # metrics could not be read) is in no table; a run whose own figures are
    # valid but whose plain-TCP reference or final evaluation failed is kept
    # and the missing part is marked where it would be
    fails, frec = R.get("failures"), R.get("failed")
    if fails is None:
        fl = ["Failures: not recorded in this step_bench.json (it predates the failures list)."]
    elif not fails:
        fl = ["Failures: none (step_bench recorded no failure)."]
    elif frec is None:
        fl = ["FAILED: %d failure(s) (runs/parts named below; this step_bench.json predates the record of "
              "whether each run is still in a table):" % len(fails)] + ["- " + f for f in fails]
    else:
        out_ = sorted({f["run"] for f in frec if not f["run_in_tables"]})
        kept_ = sorted({f["run"] for f in frec if f["run_in_tables"]} - set(out_))
        fl = ["FAILED: %d failure(s) (runs/parts named below): %d run(s) in no table, %d run(s) kept in the tables "
              "without the part that failed (marked there):" % (len(fails), len(out_), len(kept_))] + \
             ["- " + f for f in fails]
    derived["failures"] = fails
    derived["failed"] = frec
    txt.append("\n" + "\n".join(fl))
    md.append("\n".join(fl) + "\n")

    # the raw files are read from OUT/runs/<name>/, wherever OUT was when it ran
    for part in ("anatomy", "convergence", "stragglers"):
        for r in R.get(part, []):
            r["dir"] = os.path.join(out, "runs", r["name"])
            r["metrics"] = [os.path.join(r["dir"], os.path.basename(m)) for m in r["metrics"]]

    # ---- 1. step anatomy (runs of one config pooled over repetitions)
    A = R["anatomy"]
    groups = {}
    for r in A:
        groups.setdefault((r["model"], r["ps"], r["workers"], r["sync"]), []).append(r)
    G = []  # one entry per config
    for key, runs in groups.items():
        kept_rows, dropped, div = [], 0, {}
        by_worker = []  # per run, each worker's kept steps (the spread table)
        for r in runs:
            per = sb.load_steps(r)
            d_ = sb.first_nonfinite(per)
            if d_:
                div[r["rep"]] = d_
            by_worker.append([])
            for rows in per:
                i = sb.warm_split(rows)
                dropped += i
                kept_rows += rows[i:]
                by_worker[-1].append(rows[i:])
        ph = {p: sb.stats([x[p] for x in kept_rows]) for p in sb.PHASES + ("total_us",)}
        ph["pullpush_us"] = sb.stats([x["pull_us"] + x["push_us"] for x in kept_rows])
        win = {r["rep"]: r["result"]["window"] for r in runs if r["result"].get("window")}
        G.append({"key": key, "runs": runs, "cfg": runs[0], "phases": ph, "kept": len(kept_rows),
                  "dropped": dropped, "windows": win, "reps": len(runs), "diverged": div,
                  "nowindow": sorted(r["rep"] for r in runs if not r["result"].get("window")),
                  "grads_s": med([w["gradients_per_s"] for w in win.values()]),
                  "gsteps_s": med([w["global_steps_per_s"] for w in win.values()]),
                  "samples": kept_rows, "by_worker": by_worker})
    if G:
        txt.append("\n== Step anatomy: one worker step = wait (token in mailbox: barrier / ps apply) + pull "
                   "(READ params + fenced version READ, one round trip per shard) + compute + push (WRITE gradient, "
                   "slot header WRITE, FETCH_ADD: on tcp (ordered) posted without waiting; on verbs the FETCH_ADD "
                   "waits for the WRITEs' completion); samples pooled over workers and over the row's runs "
                   "(runs column)")
        txt.append("%-24s %4s %-11s %6s %5s %9s %9s %9s %9s %9s %9s" % (
            "config", "runs", "phase", "kept", "drop", "min", "p50", "avg", "stdev", "p99", "max"))
        for g in G:
            for p in sb.PHASES + ("total_us",):
                s_ = g["phases"][p]
                txt.append("%-24s %4d %-11s %6d %5d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f" % (
                    cfgname(g["cfg"]), g["reps"], p[:-3], s_["n"], g["dropped"], s_["min"], s_["p50"], s_["avg"],
                    s_["stdev"], s_["p99"], s_["max"]))
        md.append("\n### Step anatomy (p50 per phase, µs; total p99 and max; pooled over workers and the row's "
                  "runs; rates: median over the row's runs with a steady window)\n")
        md.append("| config | runs | kept/dropped | wait | pull | compute | push | total p50 | total p99 | total max | gradients/s | TF global steps/s |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")

        def nwin(g, x):
            """a rate cell: the median, and how many runs it is of when a run had no window"""
            if x is None:
                return "- (no run with a steady window)"
            return f1(x, 0) + ("" if len(g["windows"]) == g["reps"] else
                               " (%d of %d runs)" % (len(g["windows"]), g["reps"]))
        notes = []
        for g in G:
            p = g["phases"]
            md.append("| %s | %d | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                cfgname(g["cfg"]), g["reps"], g["kept"], g["dropped"], f1(p["wait_us"]["p50"]),
                f1(p["pull_us"]["p50"]), f1(p["compute_us"]["p50"]), f1(p["push_us"]["p50"]),
                f1(p["total_us"]["p50"]), f1(p["total_us"]["p99"]), f1(p["total_us"]["max"]),
                nwin(g, g["grads_s"]), nwin(g, g["gsteps_s"])))
            if g["nowindow"]:
                notes.append("%s: no steady window in %s (a worker finished before every worker was warm): its "
                             "steps are in the phase columns, not in the rates or the sync/async ratios" % (
                                 cfgname(g["cfg"]), ", ".join("r%d" % k for k in g["nowindow"])))
            for k, d_ in sorted(g["diverged"].items()):
                notes.append("%s r%d DIVERGED: loss %s at worker %d's local step %d (its step times are kept)" % (
                    cfgname(g["cfg"]), k, d_["loss"], d_["worker"], d_["local_step"]))
        if notes:
            md.append("")
            md += ["- " + x for x in notes]
            txt += ["  " + x for x in notes]
        derived["anatomy"] = [{"config": cfgname(g["cfg"]), "kept": g["kept"], "dropped": g["dropped"],
                               "phases_us": g["phases"], "gradients_per_s_median": g["grads_s"],
                               "global_steps_per_s_median": g["gsteps_s"], "reps": g["reps"],
                               "windows": len(g["windows"]), "no_window_reps": g["nowindow"],
                               "diverged": {"r%d" % k: v for k, v in g["diverged"].items()}} for g in G]

        # ---- 2a. sync vs async throughput with equal-speed workers: pairs run back to back
        by = {g["key"]: g for g in G}
        rows, unpaired = [], []
        for m, P, W in sorted({k[:3] for k in by}):
            g, ga = by.get((m, P, W, True)), by.get((m, P, W, False))
            # every repetition either pairs or is named with why not
            why = []
            for rep in sorted({r["rep"] for x in (g, ga) if x for r in x["runs"]}):
                miss = []
                for side, x in (("sync", g), ("async", ga)):
                    if not x or rep not in {r["rep"] for r in x["runs"]}:
                        miss.append("%s run missing (failed)" % side)
                    elif rep not in x["windows"]:
                        miss.append("%s run without a steady window" % side)
                if miss:
                    why.append("r%d: %s" % (rep, ", ".join(miss)))
            if why:
                unpaired.append("%s P=%d W=%d, not paired: %s" % (m, P, W, "; ".join(why)))
            if not g or not ga:
                continue
            gr, sr = [], []
            for rep, ws in sorted(g["windows"].items()):
                wa = ga["windows"].get(rep)
                if wa:
                    gr.append(ws["gradients_per_s"] / wa["gradients_per_s"])
                    sr.append(ws["global_steps_per_s"] / wa["global_steps_per_s"])
            if not gr:
                continue
            ms = g["phases"]["wait_us"]["avg"]
            ma = ga["phases"]["wait_us"]["avg"]
            # the ps's own view of the barrier (ps 0's line; runs before stop 29 lack it)
            pb = [r["ps0_barrier"] for r in g["runs"] if r.get("ps0_barrier")]
            rows.append({"model": m, "ps": P, "workers": W, "pairs": len(gr),
                         "sync_grads_s": g["grads_s"], "async_grads_s": ga["grads_s"],
                         "grads_ratio": med(gr), "grads_ratio_min": min(gr), "grads_ratio_max": max(gr),
                         "sync_gsteps_s": g["gsteps_s"], "async_gsteps_s": ga["gsteps_s"],
                         "gsteps_ratio": med(sr), "gsteps_ratio_min": min(sr), "gsteps_ratio_max": max(sr),
                         "sync_wait_avg_us": ms, "async_wait_avg_us": ma, "barrier_cost_us": ms - ma,
                         "barrier_share": (ms - ma) / g["phases"]["total_us"]["avg"],
                         "ps_spread_p50_us": med([b["spread_p50_us"] for b in pb]) if pb else None,
                         "ps_settle_p50_us": med([b["settle_p50_us"] for b in pb]) if pb else None})
        derived["sync_vs_async"] = rows
        derived["sync_vs_async_unpaired"] = unpaired
        if rows or unpaired:
            txt.append("\n== Sync vs async, equal-speed workers (steady window: all workers warm, none done; "
                       "ratio = median over the pairs column's back-to-back pairs [min..max]). TF global step: sync +1 per R=W "
                       "aggregated gradients, async +1 per gradient. barrier = mean wait sync - mean wait async; "
                       "ps_spread / ps_settle: ps 0's own p50s per update (first to R-th gradient; R-th to the releases), "
                       "median over the sync runs")
            txt.append("%-6s %2s %2s %5s %9s %9s %17s %9s %9s %17s %10s %6s %9s %9s" % (
                "model", "P", "W", "pairs", "sync g/s", "async g/s", "grad ratio", "sync gs/s", "async gs/s",
                "gstep ratio", "barrier_us", "share", "ps_spread", "ps_settle"))
            md.append("\n### Sync against async, equal-speed workers\n")
            md.append("TF global step: sync +1 per R=W aggregated gradients, async +1 per gradient. Ratios: median over "
                      "the sync/async pairs run back to back (pairs column) [min..max]. Barrier cost = mean `wait` per step in sync minus "
                      "in async, and its share of the mean sync step. Sync and async gradients/s: median over each side's runs "
                      "with a steady window. The ps's view (ps 0's end-of-run line, p50 per update, median over the sync runs): "
                      "how long after an update's first gradient its R-th came, and how long the ps then took to sum, apply "
                      "Adam and post the releases (as the ps noticed them: docs/protocol.md, question 7).\n")
            md.append("| model | P | W | pairs | sync gradients/s | async gradients/s | gradients/s ratio | sync global steps/s | async global steps/s | global steps/s ratio (TF) | barrier cost µs | share of sync step | ps: R-th gradient after the first, p50 µs | ps: sum, Adam, releases, p50 µs |")
            md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for q in rows:
                gr = "%.2f [%.2f..%.2f]" % (q["grads_ratio"], q["grads_ratio_min"], q["grads_ratio_max"])
                sr = "%.2f [%.2f..%.2f]" % (q["gsteps_ratio"], q["gsteps_ratio_min"], q["gsteps_ratio_max"])
                sp = "-" if q["ps_spread_p50_us"] is None else "%.0f" % q["ps_spread_p50_us"]
                st = "-" if q["ps_settle_p50_us"] is None else "%.0f" % q["ps_settle_p50_us"]
                txt.append("%-6s %2d %2d %5d %9.0f %9.0f %17s %9.0f %9.0f %17s %10.1f %5.0f%% %9s %9s" % (
                    q["model"], q["ps"], q["workers"], q["pairs"], q["sync_grads_s"], q["async_grads_s"], gr,
                    q["sync_gsteps_s"], q["async_gsteps_s"], sr, q["barrier_cost_us"], 100 * q["barrier_share"], sp, st))
                md.append("| %s | %d | %d | %d | %.0f | %.0f | %s | %.0f | %.0f | %s | %.1f | %.0f%% | %s | %s |" % (
                    q["model"], q["ps"], q["workers"], q["pairs"], q["sync_grads_s"], q["async_grads_s"], gr,
                    q["sync_gsteps_s"], q["async_gsteps_s"], sr, q["barrier_cost_us"], 100 * q["barrier_share"], sp, st))
            if unpaired:
                md.append("")
                md += ["- " + x for x in unpaired]
                txt += ["  " + x for x in unpaired]

        # ---- 4b. where a sync update's spread comes from: per global step
        # that every worker computed on, the worker whose push ended last
        # against the one whose push ended first, phase by phase (from the
        # workers' metrics: t ends the push; the phases before it are
        # contiguous, so release = t - push - compute - pull).  Means add
        # up to the mean spread; the p50 is beside them.
        srows = []
        for g in G:
            m_, P_, W_, s_ = g["key"]
            if not s_ or W_ < 2:
                continue
            d_ = {k: [] for k in ("spread", "release", "pull", "compute", "push")}
            for per in g["by_worker"]:
                if len(per) != W_:
                    continue
                byg = []
                for rows in per:
                    k_ = {}
                    for x in rows:
                        k_[x["global_step"]] = None if x["global_step"] in k_ else x
                    byg.append(k_)
                for gs in set.intersection(*[set(k) for k in byg]):
                    xs = [k[gs] for k in byg]
                    if any(x is None for x in xs):
                        continue  # a worker with two steps on one version
                    lo, hi = min(xs, key=lambda x: x["t"]), max(xs, key=lambda x: x["t"])
                    rel = [x["t"] * 1e6 - x["push_us"] - x["compute_us"] - x["pull_us"] for x in (lo, hi)]
                    d_["spread"].append((hi["t"] - lo["t"]) * 1e6)
                    d_["release"].append(rel[1] - rel[0])
                    for ph in ("pull", "compute", "push"):
                        d_[ph].append(hi[ph + "_us"] - lo[ph + "_us"])
            if d_["spread"]:
                srows.append((g, d_))
        if srows:
            derived["sync_spread"] = []
            txt.append("\n== Where a sync update's spread comes from (workers' metrics; us)")
            txt.append("   per global step all W workers computed on: the last push to end minus the first; then the "
                       "last pusher's phase minus the first pusher's (release = when its wait ended). Means add up to "
                       "the mean spread.")
            txt.append("%-20s %6s %10s %10s %9s %9s %9s %9s" % ("config", "steps", "spread_p50", "spread_avg",
                                                              "release", "pull", "compute", "push"))
            md.append("\n**Where a sync update's spread comes from** (from the workers' metrics, warm-up dropped): "
                      "for each global step that all W workers computed on, the spread is the time from the first "
                      "worker's push ending to the last one's; the other columns are the mean of the last pusher's "
                      "phase minus the first pusher's (release: when its wait for the release ended), which add up "
                      "to the mean spread. The ps's own view of the same spread (when the gradients reached it) is "
                      "in the table above.\n")
            md.append("| config | steps | spread p50 | spread mean | release | pull | compute | push |")
            md.append("|---|---|---|---|---|---|---|---|")
            for g, d_ in srows:
                mean_ = {k: sum(v) / len(v) for k, v in d_.items()}
                p50_ = sb.stats(d_["spread"])["p50"]
                derived["sync_spread"].append({"config": cfgname(g["cfg"]), "steps": len(d_["spread"]),
                                               "spread_p50_us": p50_,
                                               "mean_us": mean_})
                name_ = "%s P=%d W=%d" % g["key"][:3]
                txt.append("%-20s %6d %10.0f %10.0f %9.0f %9.0f %9.0f %9.0f" % (
                    name_, len(d_["spread"]), p50_, mean_["spread"], mean_["release"], mean_["pull"],
                    mean_["compute"], mean_["push"]))
                md.append("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
                    name_, len(d_["spread"]), p50_, mean_["spread"], mean_["release"], mean_["pull"],
                    mean_["compute"], mean_["push"]))

        # ---- 5. transport cost vs plain TCP request/response
        # the unpaired columns: each configuration's own first run's
        # references (not one per model and P, which is another
        # configuration's run for every row but one)
        trows = [(g,) + first_ref(R, g, "tcp_rr") for g in G if "push_bytes_per_step" in g["cfg"]]
        # a configuration whose every run's tcp_rr reference failed has no row
        noref = [cfgname(g["cfg"]) for g, q, qn in trows
                 if not q and any("tcp_rr" in r["result"].get("missing", []) for r in g["runs"])]
        trows = [(g, q, qn) for g, q, qn in trows if q]
        if trows:
            txt.append("\n== Transport cost of a step: pull+push per step (rdmaps: READ params + fenced 8 B READ, "
                       "one wait; push: WRITE gradient, 64 B slot header WRITE and 8 B FETCH_ADD, posted without waiting on "
                       "an ordered transport; no copies: both move straight from/to the flat model vectors) against tcp_rr, ONE plain TCP request/response "
                       "(request = the gradient bytes, response = the parameter bytes), a ROUND TRIP; pull+push = pull (a ROUND TRIP) "
                       "+ push (on tcp a LOCAL SEND: it ends when its bytes are handed to the socket), p50")
            txt.append("   and against tcp_rr --mode step: plain TCP in the step's shape (push = send of the gradient "
                       "bytes, no answer; untimed release; pull = ROUND TRIP of an 8 B request and the parameter bytes; "
                       "then an untimed idle gap as long as that run's compute p50, gap_us)")
            txt.append("   tcp_rr_p50, tcp_step_p50, ratio, ratio_step: the references measured right after the "
                       "configuration's own first run (ref: its repetition) and the pooled pull+push p50 over them; "
                       "paired_* = each run's pull+push p50 over the references measured right after it, "
                       "median [min..max] over the configuration's runs")
            allref = [r["result"][k] for g in G for r in g["runs"] for k in ("tcp_rr", "tcp_rr_step")
                      if r["result"].get(k)]
            allref += list(R.get("tcp_rr", {}).values()) + list(R.get("tcp_rr_step", {}).values())
            ccs = sorted({q.get("congestion", "not recorded") for q in allref})
            txt.append("   TCP congestion control (the system default; neither side sets one): %s" % ", ".join(ccs))
            txt.append("%-24s %9s %9s %12s %5s %11s %7s %13s %10s %20s %20s" % (
                "config", "push_B", "pull_B", "pullpush_p50", "ref", "tcp_rr_p50", "ratio", "tcp_step_p50",
                "ratio_step", "paired_rr", "paired_step"))
            md.append("\n### Transport cost of a step against a plain TCP request/response (µs; pull: a round trip, push: a local send on tcp)\n")
            md.append("`tcp_rr`: one plain TCP request/response of the same bytes (the target's reference). "
                      "`tcp_rr --mode step`: the same bytes as plain TCP in the step's shape: push (send, no "
                      "answer waited for) + pull (round trip: 8 B request, parameter bytes back), the release "
                      "between them not timed (push / pull p50 in brackets), then an untimed idle gap as long as the "
                      "compute p50 of the run it follows (gap µs), as a worker computes between its pull "
                      "and its push.\n")
            md.append("Both references run right after every run, the step-shaped one with that run's compute p50 "
                      "as its gap. The `tcp_rr` and step columns are the references measured right after the "
                      "configuration's own first run (its repetition in brackets; another run's name when the file "
                      "predates per-run references) and the pooled pull+push p50 over them; `paired` is each run's pull+push p50 over its own references, median "
                      "[min..max] over the configuration's runs: the figure that judges the target, since the "
                      "machine drifts between runs. TCP congestion control of the references, the system "
                      "default that the rdmaps tasks get too (neither sets one; bbr against cubic moved the plain-TCP "
                      "pull by up to 2x on the dev machine, docs/benchmarks.md): %s.\n" % ", ".join(ccs))
            md.append("`runs`: the configuration's runs; `n`: pull+push samples pooled over them (warm-up "
                      "dropped); a p99 of n < 100 samples is the maximum (nearest rank: sample ceil(0.99 n)). `paired` ratios are over the runs with "
                      "references.\n")
            md.append("| config | runs | push bytes | pull bytes | pull+push p50 | pull+push p99 (n) | tcp_rr p50 | tcp_rr p99 | ratio p50 "
                      "| tcp_rr step p50 (push / pull) | ratio to step p50 | paired ratio to tcp_rr | paired ratio to step |")
            md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            derived["transport"] = []
            for g, q, qn in trows:
                c_ = g["cfg"]
                qs, qsn = first_ref(R, g, "tcp_rr_step")
                pp = g["phases"]["pullpush_us"]
                ratio = pp["p50"] / q["p50_us"]
                rs_ = pp["p50"] / qs["p50_us"] if qs else None
                prr = [r["result"]["vs_tcp_rr_p50"] for r in g["runs"] if "vs_tcp_rr_p50" in r["result"]]
                pst = [r["result"]["vs_tcp_step_p50"] for r in g["runs"] if "vs_tcp_step_p50" in r["result"]]
                derived["transport"].append({"config": cfgname(c_), "push_bytes": c_["push_bytes_per_step"],
                                             "pull_bytes": c_["pull_bytes_per_step"], "pullpush_p50_us": pp["p50"],
                                             "tcp_rr_p50_us": q["p50_us"], "ratio": ratio,
                                             "reference_run": qn, "reference_step_run": qsn,
                                             "tcp_step_p50_us": qs["p50_us"] if qs else None,
                                             "ratio_step": rs_,
                                             "tcp_step_gap_us": qs.get("gap_us", 0) if qs else None,
                                             "paired_ratio": prr, "paired_ratio_step": pst,
                                             "paired_ratio_median": med(prr),
                                             "paired_ratio_step_median": med(pst),
                                             "runs": g["reps"], "pullpush_n": pp["n"], "pullpush_p99_us": pp["p99"]})
                txt.append("%-24s %9d %9d %12.1f %5s %11.1f %7.2f %13s %10s %20s %20s" % (
                    cfgname(c_), c_["push_bytes_per_step"], c_["pull_bytes_per_step"], pp["p50"], refname(g, qn),
                    q["p50_us"], ratio,
                    "%.1f" % qs["p50_us"] if qs else "-", "%.2f" % rs_ if qs else "-", span(prr), span(pst)))
                md.append("| %s | %d | %d | %d | %.1f | %.1f (n %d%s) | %.1f (%s) | %.1f | %.2f | %s | %s | %s | %s |" % (
                    cfgname(c_), g["reps"], c_["push_bytes_per_step"], c_["pull_bytes_per_step"], pp["p50"], pp["p99"],
                    pp["n"], ": the max" if pp["n"] < 100 else "",
                    q["p50_us"], refname(g, qn), q["p99_us"], ratio,
                    "%.1f (%.1f / %.1f; gap %d; %s)" % (qs["p50_us"], qs["push_p50_us"], qs["pull_p50_us"],
                                                       qs.get("gap_us", 0), refname(g, qsn))
                    if qs else "-",
                    "%.2f" % rs_ if qs else "-", span(prr), span(pst)))
            # a run kept without a reference that failed: named, with what it lacks
            tnotes = []
            for g, q, qn in trows:
                for r in sorted(g["runs"], key=lambda r: r.get("rep", 0)):
                    miss = [k for k in ("tcp_rr", "tcp_rr_step") if k in r["result"].get("missing", [])]
                    if miss:
                        tnotes.append("%s r%d: %s reference failed (see the failures above); the run is in the "
                                      "pooled columns, not in the paired %s" % (
                                          cfgname(g["cfg"]), r.get("rep", 0),
                                          " and ".join({"tcp_rr": "tcp_rr", "tcp_rr_step": "step-shaped"}[k]
                                                       for k in miss),
                                          " or ".join({"tcp_rr": "ratio to tcp_rr",
                                                       "tcp_rr_step": "ratio to step"}[k] for k in miss)))
            if tnotes:
                md.append("")
                md += ["- " + x for x in tnotes]
                txt += ["  " + x for x in tnotes]
        else:
            tnotes = []
        tnotes += ["%s: every run's tcp_rr reference failed (see the failures above): not in the transport table" % x
                   for x in noref]
        if noref:
            md.append("")
            md += ["- " + x for x in tnotes[-len(noref):]]
            txt += ["  " + x for x in tnotes[-len(noref):]]
        derived["transport_missing_references"] = tnotes

        # ---- 5a. the sync step at W > 1 against W plain TCP clients at once
        wrows = [g for g in G if g["cfg"].get("sync") and g["cfg"]["workers"] > 1
                 and any(k in r["result"] for r in g["runs"] for k in ("tcp_rr_w", "tcp_rr_step_w"))]
        if wrows:
            derived["transport_w"] = []
            txt.append("\n== Transport cost of a sync step at W > 1 against W plain TCP clients at once (us)")
            txt.append("   tcp_rr --clients W: W client processes, each its own connection, against one server with a "
                       "thread per connection, the same bytes per client as a worker's pull and push; step shape: "
                       "released together once all W pushes are in. Samples pooled over the W clients. paired = each "
                       "run's pull+push p50 over its own references: median [min..max]")
            txt.append("%-24s %12s %16s %20s %16s %20s" % ("config", "pullpush_p50", "rr_xW_p50 (run)", "paired_rr_xW",
                                                          "step_xW_p50", "paired_step_xW"))
            md.append("\n**Against W plain TCP clients at once** (`tcp_rr --clients W`, sync runs with W > 1): W client "
                      "processes, each with its own connection, against one server with a thread per connection, "
                      "each moving a worker's pull and push bytes; in the step shape the server releases the W "
                      "clients together once all W pushes are in, as the barrier does, with the run's compute p50 "
                      "as the idle gap. Samples pooled over the clients. The single-client columns above stay the "
                      "target's reference as first measured; this one adds the workers' concurrency to it.\n")
            md.append("| config | runs | pull+push p50 | W-client tcp_rr p50 (run) | W-client step p50 (push / pull) "
                      "| paired ratio to W-client tcp_rr | paired ratio to W-client step |")
            md.append("|---|---|---|---|---|---|---|")
            for g in wrows:
                c_ = g["cfg"]
                q, qn = first_ref(R, g, "tcp_rr_w")
                qs, qsn = first_ref(R, g, "tcp_rr_step_w")
                pp = g["phases"]["pullpush_us"]
                prr = [r["result"]["vs_tcp_rr_w_p50"] for r in g["runs"] if "vs_tcp_rr_w_p50" in r["result"]]
                pst = [r["result"]["vs_tcp_rr_step_w_p50"] for r in g["runs"]
                       if "vs_tcp_rr_step_w_p50" in r["result"]]
                derived["transport_w"].append({"config": cfgname(c_), "clients": c_["workers"],
                                               "pullpush_p50_us": pp["p50"],
                                               "tcp_rr_w_p50_us": q["p50_us"] if q else None,
                                               "tcp_step_w_p50_us": qs["p50_us"] if qs else None,
                                               "paired_ratio": prr, "paired_ratio_step": pst,
                                               "paired_ratio_median": med(prr),
                                               "paired_ratio_step_median": med(pst), "runs": g["reps"]})
                rr_cell = ("%.1f (%s)" % (q["p50_us"], refname(g, qn))) if q else "-"
                txt.append("%-24s %12.1f %16s %20s %16s %20s" % (
                    cfgname(c_), pp["p50"], rr_cell, span(prr), "%.1f" % qs["p50_us"] if qs else "-", span(pst)))
                md.append("| %s | %d | %.1f | %s | %s | %s | %s |" % (
                    cfgname(c_), g["reps"], pp["p50"], rr_cell,
                    ("%.1f (%.1f / %.1f; gap %d; %s)" % (qs["p50_us"], qs["push_p50_us"], qs["pull_p50_us"],
                                                         qs.get("gap_us", 0), refname(g, qsn))) if qs else "-",
                    span(prr), span(pst)))
            wmiss = ["%s r%d: %s reference failed (see the failures above)" % (
                cfgname(g["cfg"]), r.get("rep", 0), k) for g in G for r in g["runs"]
                for k in ("tcp_rr_w", "tcp_rr_step_w") if k in r["result"].get("missing", [])]
            if wmiss:
                md.append("")
                md += ["- " + x for x in wmiss]
                txt += ["  " + x for x in wmiss]

    # ---- 5b. where the pull+push time goes: the step's four operations, each
    # measured alone by rt_bench in this run (mlp, 1 ps)
    if rtb and G:
        rows_ = {(q["impl"], q["op"], q["bytes"]): q for q in rtb.get("results", [])}
        big = max((b for (i, o, b) in rows_ if i == "rt-tcp" and o == "READ"), default=None)
        need = [("rt-tcp", "READ", big), ("rt-tcp", "READ", 8), ("rt-tcp", "WRITE", big), ("rt-tcp", "FETCH_ADD", 8)]
        g1 = by.get(("mlp", 1, 1, True)) if A else None
        if big and all(k in rows_ for k in need) and g1:
            s4 = sum(rows_[k]["p50"] for k in need)
            pp = g1["phases"]["pullpush_us"]["p50"]
            derived["decomposition"] = {"ops_p50_us": {"%s %d" % (k[1], k[2]): rows_[k]["p50"] for k in need},
                                        "sum_p50_us": s4, "pullpush_p50_us_mlp_p1_w1_sync": pp}
            line = ("pull+push of mlp P=1 W=1 sync, p50 %.1f us; the same four operations measured alone by rt_bench "
                    "(round trips, p50): READ %d B %.1f, READ 8 B %.1f, WRITE %d B %.1f, FETCH_ADD 8 B %.1f (sum %.1f us; "
                    "the pull posts its two READs together and waits once)"
                    % (pp, big, rows_[need[0]]["p50"], rows_[need[1]]["p50"], big, rows_[need[2]]["p50"],
                       rows_[need[3]]["p50"], s4))
            txt.append("\n== Where pull+push goes\n" + line)
            md.append("\n" + line + ".\n")
        # latency/bandwidth of the transport (used by docs/scaling.md): alpha =
        # the median of the three 8 B p50s (READ, WRITE, FETCH_ADD); bandwidth
        # from the mean READ/WRITE p50 at the largest size minus alpha.  Two
        # anchor sizes, not a least-squares line: the rows between are noisy
        # on a shared machine and a line through them is pulled around.
        small = sorted(rows_[("rt-tcp", o, 8)]["p50"] for o in ("READ", "WRITE", "FETCH_ADD")
                       if ("rt-tcp", o, 8) in rows_)
        bigs = [rows_[("rt-tcp", o, big)]["p50"] for o in ("READ", "WRITE") if ("rt-tcp", o, big) in rows_]
        if big and small and bigs:
            t8 = small[len(small) // 2]
            tb = sum(bigs) / len(bigs)
            beta = (tb - t8) / (big - 8)
            derived["transport_fit"] = {"alpha_us": t8, "beta_us_per_byte": beta,
                                        "GBps": 1e-3 / beta if beta > 0 else None,
                                        "from": "rt_bench tcp: median 8 B p50 of READ/WRITE/FETCH_ADD; "
                                                "mean READ/WRITE p50 at %d B" % big}
            line = ("transport line from rt_bench tcp round trips (alpha = median 8 B p50 of READ, WRITE, FETCH_ADD; "
                    "slope to the mean READ/WRITE p50 at %d B): t = %.1f us + bytes / %.2f GB/s"
                    % (big, t8, 1e-3 / beta if beta > 0 else float("nan")))
            # how well two anchors describe every row: measured / predicted
            # per READ/WRITE/FETCH_ADD row of the run (the fit's anchors
            # included), so a reader sees where the line is off
            resid = []
            for (kind, o, nb), row in sorted(rows_.items(), key=lambda kv: (kv[0][2], kv[0][1])):
                if kind != "rt-tcp" or o not in ("READ", "WRITE", "FETCH_ADD"):
                    continue
                pred = t8 + nb * beta
                if pred > 0:
                    resid.append({"op": o, "bytes": nb, "p50_us": row["p50"], "predicted_us": pred,
                                  "measured_over_predicted": row["p50"] / pred})
            derived["transport_fit"]["rows"] = resid
            if resid:
                lo = min(resid, key=lambda r: r["measured_over_predicted"])
                hi = max(resid, key=lambda r: r["measured_over_predicted"])
                line += ("; measured / predicted over its %d rows: min %.2f (%s %d B), max %.2f (%s %d B)"
                         % (len(resid), lo["measured_over_predicted"], lo["op"], lo["bytes"],
                            hi["measured_over_predicted"], hi["op"], hi["bytes"]))
            txt.append(line)
            md.append(line + "\n")

    # ---- 2b. convergence
    C = R["convergence"]
    if C:
        txt.append("\n== Convergence: validation cross entropy (summed over the 5000 validation images) of the "
                   "chief's parameters every 10 local steps, against wall time from the first step; target %.0f"
                   % target)
        md.append("\n### Convergence: wall time to validation cross entropy <= %.0f (mlp, 1 ps, 2 workers)\n" % target)
        md.append("Wall time counts from the first step begun by any worker; `skew` is how much later the last worker "
                  "began its first step (process start and MNIST load).\n")
        md.append("| run | time to target s | global step at target | gradients/s (run) | TF global steps/s (run) | final val CE | final accuracy | skew s |")
        md.append("|---|---|---|---|---|---|---|---|")
        txt.append("%-28s %9s %8s %10s %10s %9s %8s" % ("run", "t_target", "gstep", "grads/s", "gsteps/s",
                                                     "final_ce", "acc"))
        conv = []
        for r in C:
            x = r["result"]
            # diverged: a nan / inf loss in the metrics or validation figure
            dv = x.get("diverged") or next(
                ({"val_ce": repr(p["val_ce"]) if p["val_ce"] is not None else "not finite (null)",
                  "global_step": p["global_step"]} for p in x["val"] if not finite(p["val_ce"])), None)
            hit = next((p for p in x["val"] if finite(p["val_ce"]) and p["val_ce"] <= target), None)
            fin = x["val"][-1] if x["val"] else {}
            q = {"name": r["name"], "sync": r["sync"], "t_target_s": hit["wall_s"] if hit else None,
                 "diverged": dv, "last_val_s": x["val"][-1]["wall_s"] if x["val"] else None,
                 "start_skew_s": x.get("start_skew_s"),
                 "gstep_target": hit["global_step"] if hit else None, "final_ce": fin.get("val_ce"),
                 "final_acc": fin.get("val_acc"), "grads_s": x["run"]["gradients_per_s"],
                 "gsteps_s": x["run"]["global_steps_per_s"]}
            conv.append(q)
            nm = r["name"] + (" DIVERGED" if dv else "")
            fce = ce_cell(q["final_ce"]) if fin else "-"
            facc = ce_cell(q["final_acc"], 4) if fin else "-"
            txt.append("%-28s %9s %8s %10.0f %10.0f %9s %8s" % (
                nm, f1(q["t_target_s"], 3), q["gstep_target"] if hit else "-", q["grads_s"],
                q["gsteps_s"] or 0, fce, facc))
            md.append("| %s | %s | %s | %.0f | %.0f | %s | %s | %s |" % (
                nm, f1(q["t_target_s"], 3) if hit else "> %s" % f1(q["last_val_s"], 3), q["gstep_target"] if hit else "not reached", q["grads_s"],
                q["gsteps_s"] or 0, fce, facc, f1(q["start_skew_s"], 3)))
        derived["convergence"] = conv
        # time to target over every run of a side: a run that never reached
        # it is censored (its time is later than its last validation point),
        # not left out
        ttt, words = {}, []
        for side, sy in (("sync", True), ("async", False)):
            qs_ = [q for q in conv if q["sync"] == sy]
            if not qs_:
                continue
            m_, why = cmedian([q["t_target_s"] for q in qs_ if q["t_target_s"] is not None],
                              [q["last_val_s"] for q in qs_ if q["t_target_s"] is None])
            k = sum(q["t_target_s"] is not None for q in qs_)
            ttt[side] = {"median_s": m_, "reached": k, "runs": len(qs_), "median_note": why,
                         "not_reached_last_val_s": [q["last_val_s"] for q in qs_ if q["t_target_s"] is None]}
            words.append("%s %s (%d of %d reached it)" % (side, "%.3f s" % m_ if m_ is not None else why, k,
                                                          len(qs_)))
        derived["time_to_target"] = ttt
        if words:
            s_, a_ = ttt.get("sync"), ttt.get("async")
            ratio, note = None, None
            if not (s_ and a_):
                note = "no ratio: one side has no run"
            elif (s_["reached"], s_["runs"]) != (a_["reached"], a_["runs"]):
                note = ("no async/sync ratio: the two medians are over different counts of runs that reached the "
                        "target, so they are not comparable")
            elif s_["median_s"] is None or a_["median_s"] is None:
                note = "no ratio: a median is not determined"
            else:
                ratio = a_["median_s"] / s_["median_s"]
            derived["time_to_target_async_over_sync"] = ratio
            if note:
                derived["time_to_target_ratio_withheld"] = note
            line = "median time to target %.0f: %s; %s" % (
                target, ", ".join(words),
                note if note else "async/sync = %.2f; >1 means sync got there sooner" % ratio)
            txt.append(line)
            md.append("\n" + line + "\n")
        # plot: validation CE vs wall time, the finite (and, for the log
        # scale, positive) points only: a diverged run's nan / inf points are
        # left out, and a run with none left is left out of the plot and
        # named (gnuplot fails on a plot whose every point is undefined)
        parts, unplotted, partial = [], [], []
        for r in C:
            v = r["result"]["val"]
            ok = [p for p in v if finite(p["val_ce"]) and p["val_ce"] > 0]
            if not ok:
                unplotted.append(r["name"])
                continue
            if len(ok) < len(v):
                partial.append("%s (%d of %d points)" % (r["name"], len(ok), len(v)))
            dat = os.path.join(plots, "conv_%s.dat" % r["name"])
            with open(dat, "w") as d:
                for p in ok:
                    d.write("%.6f %.6g\n" % (p["wall_s"], p["val_ce"]))
            parts.append("'%s' using 1:2 with linespoints pt 7 ps 0.4 lc rgb '%s' title '%s'" % (
                dat, "#1f77b4" if r["sync"] else "#d62728", r["name"]))
        gpf = os.path.join(plots, "conv.gp")
        if parts:
            with open(gpf, "w") as g:
                g.write("set terminal pngcairo size 800,480 font 'Sans,10' noenhanced\nset output '%s'\n" %
                        os.path.join(plots, "conv.png"))
                if unplotted:
                    g.write("set label 'not plotted (no finite point): %s' at graph 0.02, graph 0.05 left\n"
                            % ", ".join(unplotted))
                g.write(("set title 'mlp, 1 ps, 2 workers, %s: validation cross entropy vs wall time (dashed: target %g)'\n"
                         % (c["transport"], target)) +
                        "set xlabel 'wall time since the first step (s)'\nset ylabel 'validation cross entropy (sum over 5000)'\n"
                        "set logscale y\nset grid\nset key top right\n")
                g.write("set arrow from graph 0, first %g to graph 1, first %g nohead dt 2 lc rgb 'gray'\n" %
                        (target, target))
                g.write("plot " + ", \\\n     ".join(parts) + "\n")
        else:
            for f_ in (gpf, os.path.join(plots, "conv.png")):  # a stale plot of an earlier report
                if os.path.exists(f_):
                    os.remove(f_)
        derived["convergence_plot"] = {"plotted": [r["name"] for r in C if r["name"] not in unplotted],
                                       "not_plotted_no_finite_point": unplotted,
                                       "nonfinite_points_left_out": partial}
        if unplotted or partial:
            line = ("convergence plot (plots/conv.png): %s%s" % (
                "not drawn, no run has a finite validation point" if not parts else
                ("left out, no finite validation point: " + ", ".join(unplotted) if unplotted else ""),
                ("%snon-finite points left out: %s" % ("; " if unplotted else "", ", ".join(partial))
                 if partial else "")))
            txt.append(line)
            md.append(line + "\n")

    # ---- 3. stragglers
    S = R["stragglers"]
    if S:
        d0 = S[0]["straggler_delay_ms"]
        txt.append("\n== Stragglers: mlp, 1 ps, 3 workers; worker %d sleeps %d ms per step (compute phase). "
                   "Step times of the two fast workers and of the straggler (p50/p99, us); whole-run rates "
                   "(warm-up included: first step begun to last step ended)" % (S[0]["straggler_task"], d0))
        md.append("\n### Stragglers (mlp, 1 ps, 3 workers, worker %d sleeps %d ms per step)\n" %
                  (S[0]["straggler_task"], d0))
        md.append("| run | fast step p50 µs | fast step p99 µs | straggler step p50 µs | gradients/s | TF global steps/s | updates | dropped stale | train wall s | final val CE | final accuracy |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|")
        txt.append("%-16s %10s %10s %10s %9s %9s %7s %7s %7s %9s %7s" % (
            "run", "fast_p50", "fast_p99", "strag_p50", "grads/s", "gsteps/s", "updates", "dropped", "wall_s",
            "final_ce", "acc"))
        srows = []
        for r in S:
            x = r["result"]
            fs, ss = x.get("fast_total_us"), x.get("straggler_total_us")
            fv = x.get("final_val") or {}
            # no final validation: its evaluation failed (named above) or not recorded
            nofv = "failed" if "final_val" in x.get("missing", []) else "-"
            pd = r.get("ps0_done", {})
            dv = x.get("diverged")
            q = {"label": r["label"] + (" DIVERGED" if dv else ""), "diverged": dv, "fast_p50": fs and fs["p50"], "fast_p99": fs and fs["p99"],
                 "strag_p50": ss and ss["p50"], "grads_s": x["run"]["gradients_per_s"],
                 "gsteps_s": x["run"]["global_steps_per_s"], "updates": pd.get("updates"),
                 "dropped": pd.get("dropped"), "wall_s": x["train_wall_s"], "final_ce": fv.get("val_ce"),
                 "final_acc": fv.get("val_acc")}
            srows.append(q)
            txt.append("%-16s %10s %10s %10s %9.0f %9.0f %7s %7s %7.2f %9s %7s" % (
                q["label"], f1(q["fast_p50"]), f1(q["fast_p99"]), f1(q["strag_p50"]), q["grads_s"],
                q["gsteps_s"] or 0, q["updates"], q["dropped"], q["wall_s"],
                ce_cell(q["final_ce"]) if fv else nofv, ce_cell(q["final_acc"], 4) if fv else nofv))
            md.append("| %s | %s | %s | %s | %.0f | %.0f | %s | %s | %.2f | %s | %s |" % (
                q["label"], f1(q["fast_p50"]), f1(q["fast_p99"]), f1(q["strag_p50"]), q["grads_s"],
                q["gsteps_s"] or 0, q["updates"], q["dropped"], q["wall_s"],
                ce_cell(q["final_ce"]) if fv else nofv, ce_cell(q["final_acc"], 4) if fv else nofv))
        derived["stragglers"] = srows

    # ---- 4. ps apply
    if pa:
        txt.append("\n== ps apply: optimizer throughput over the shard bytes vs a[i] += b[i] over the same floats "
                   "(vs_add) and over the same bytes (vs_bytes) (bench/ps_apply/ps_apply_bench; bandwidth = "
                   "bytes moved / p50 time)")
        txt.append("%-12s %9s %10s %9s %9s %9s %9s %9s" % ("what", "floats", "bytes", "min_us", "p50_us", "GB/s",
                                                         "vs_add", "vs_bytes"))
        md.append("\n### ps apply against `a[i] += b[i]` over the same floats and over the same bytes "
                  "(bench/ps_apply)\n")
        md.append("| what | floats (loop) | bytes moved | min µs | p50 µs | GB/s (p50) | ratio to a[i] += b[i], "
                  "same floats | ratio to a[i] += b[i], same bytes |")
        md.append("|---|---|---|---|---|---|---|---|")
        rows = [q for q in pa if "gbps" in q and "what" in q]
        for q in rows:
            ratio = q["gbps"] / q["ref_gbps"] if q.get("ref_gbps") else None
            ratio_b = q["gbps"] / q["ref_bytes_gbps"] if q.get("ref_bytes_gbps") else None
            lf = q.get("loop_floats", q["floats"])
            txt.append("%-12s %9d %10d %9.2f %9.2f %9.2f %9s %9s" % (q["what"], lf, q["bytes"], q["min_us"],
                                                                     q["p50_us"], q["gbps"], f1(ratio, 2),
                                                                     f1(ratio_b, 2)))
            md.append("| %s | %d | %d | %.2f | %.2f | %.2f | %s | %s |" % (q["what"], lf, q["bytes"], q["min_us"],
                                                                          q["p50_us"], q["gbps"], f1(ratio, 2),
                                                                          f1(ratio_b, 2)))
        rat = [q for q in pa if "ratio" in q]
        if rat:
            md.append("\nThe target's figure (median of 3 alternating measurements, range in brackets):\n")
            md.append("| Adam over floats | vs a[i] += b[i], same floats | vs a[i] += b[i], same bytes |")
            md.append("|---|---|---|")
            for q in rat:
                fs, fb = q["vs_stream_range"], q["vs_stream_bytes_range"]
                md.append("| %d | %.2f [%.2f..%.2f] | %.2f [%.2f..%.2f] |" % (
                    q["floats"], q["vs_stream"], fs[0], fs[1], q["vs_stream_bytes"], fb[0], fb[1]))
                txt.append("adam_apply %d floats: bw ratio %.2f vs same floats [%.2f..%.2f], %.2f vs same bytes "
                           "[%.2f..%.2f]" % (q["floats"], q["vs_stream"], fs[0], fs[1], q["vs_stream_bytes"],
                                             fb[0], fb[1]))
        derived["ps_apply"] = rows
        derived["ps_apply_ratios"] = rat

    # ---- plots from the raw metrics
    if G:
        # stacked bars: mean per phase (means add up; medians would not)
        sel = [g for g in G if g["key"][1] == 1]
        for nm, models in (("anatomy_mlp", ("mlp",)), ("anatomy_lstm", ("lstm",))):
            sub = [g for g in sel if g["key"][0] in models]
            if not sub:
                continue
            fn = os.path.join(plots, nm + ".dat")
            with open(fn, "w") as d:
                d.write("# config wait pull compute push\n")
                for g in sub:
                    p = g["phases"]
                    d.write('"W=%d %s" %.1f %.1f %.1f %.1f\n' % (
                        g["key"][2], "sync" if g["key"][3] else "async", p["wait_us"]["avg"],
                        p["pull_us"]["avg"], p["compute_us"]["avg"], p["push_us"]["avg"]))
            with open(os.path.join(plots, nm + ".gp"), "w") as gp:
                gp.write("set terminal pngcairo size 800,480 font 'Sans,10' noenhanced\nset output '%s'\n" %
                         os.path.join(plots, nm + ".png"))
                gp.write("set title 'Step anatomy, %s, 1 ps, %s: mean time per worker step'\n"
                         "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
                         "set boxwidth 0.7\nset ylabel 'microseconds per step (mean)'\nset grid ytics\n"
                         "set key outside right top\nset yrange [0:*]\n" % (models[0], c["transport"]))
                gp.write("plot '%s' using 2:xtic(1) title 'wait' lc rgb '#999999', '' using 3 title 'pull' lc rgb '#1f77b4', "
                         "'' using 4 title 'compute' lc rgb '#2ca02c', '' using 5 title 'push' lc rgb '#d62728'\n" % fn)
        # CDFs of the step total and of pull+push, mlp P=1
        parts, parts2 = [], []
        colors = {1: "#1f77b4", 2: "#ff7f0e", 3: "#2ca02c", 4: "#d62728"}
        for g in G:
            m, P, W, s_ = g["key"]
            if m != "mlp" or P != 1:
                continue
            tot = sorted(x["total_us"] for x in g["samples"])
            pp = sorted(x["pull_us"] + x["push_us"] for x in g["samples"])
            for v, lst, nm in ((tot, parts, "total"), (pp, parts2, "pullpush")):
                fn = os.path.join(plots, "cdf_%s_%s.dat" % (nm, "w%d_%s" % (W, "sync" if s_ else "async")))
                with open(fn, "w") as d:
                    for k, x in enumerate(v):
                        d.write("%.1f %.6f\n" % (x, (k + 1) / len(v)))
                lst.append("'%s' using 1:2 with lines lw 2 lc rgb '%s' %s title '%s'" % (
                    fn, colors.get(W, "#7f7f7f"), "dt 1" if s_ else "dt 2",
                    "W=%d %s" % (W, "sync" if s_ else "async")))
        for nm, lst, title in (("total", parts, "step time (wait+pull+compute+push)"),
                               ("pullpush", parts2, "pull+push per step (pull: round trip, push: local send)")):
            if not lst:
                continue
            with open(os.path.join(plots, "cdf_%s.gp" % nm), "w") as gp:
                gp.write("set terminal pngcairo size 800,480 font 'Sans,10' noenhanced\nset output '%s'\n" %
                         os.path.join(plots, "cdf_%s.png" % nm))
                gp.write("set title 'CDF of %s, mlp, 1 ps, %s (after warm-up, every sample)'\n"
                         "set xlabel 'microseconds (log scale)'\nset ylabel 'fraction of steps'\nset logscale x\nset grid\n"
                         "set key bottom right\nset yrange [0:1]\n" % (title, c["transport"]))
                # the marker: the reference of mlp P=1 W=1 sync's first run,
                # named, with the range of every mlp P=1 run's own reference
                g1 = by.get(("mlp", 1, 1, True))
                rrk, rrn = first_ref(R, g1, "tcp_rr") if g1 else (None, None)
                allp = [r["result"]["tcp_rr"]["p50_us"] for g in G if g["key"][:2] == ("mlp", 1)
                        for r in g["runs"] if r["result"].get("tcp_rr")]
                if nm == "pullpush" and rrk:
                    rng = ("(mlp P=1 references of all %d runs: %.1f-%.1f us)" % (len(allp), min(allp), max(allp))
                           if allp else "")
                    gp.write("set xrange [%g:*]\n" % (min([rrk["p50_us"]] + allp) / 2))
                    gp.write("set arrow from %g, graph 0 to %g, graph 1 nohead lc rgb 'black' dt 3\n"
                             "set label 'plain TCP request/response p50 after %s: %.1f us' "
                             "at %g, graph 0.5 left offset 0.5,0\n"
                             "set label '%s' at %g, graph 0.45 left offset 0.5,0\n" % (
                                 rrk["p50_us"], rrk["p50_us"], rrn, rrk["p50_us"], rrk["p50_us"], rng, rrk["p50_us"]))
                gp.write("plot " + ", \\\n     ".join(lst) + "\n")
    for gp in sorted(f for f in os.listdir(plots) if f.endswith(".gp")):
        r = subprocess.run(["gnuplot", os.path.join(plots, gp)], capture_output=True, text=True)
        if r.returncode:
            print("report: gnuplot %s failed: %s" % (gp, r.stderr.strip()), file=sys.stderr)
            return 1
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write("\n".join(txt) + "\n")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "report.json"), "w") as f:
        sb.dump(derived, f, indent=1)
    print("\n".join(txt))
    print("\nreport: %s/report.{txt,md,json}, plots in %s" % (out, plots))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except sb.Failed as e:  # a malformed metrics file of a run
        die("report: %s" % e)
