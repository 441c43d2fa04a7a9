#!/usr/bin/env bash
# bench/run.sh: the whole rdmaps benchmark suite in one command (issue 5).
#
#   bench/run.sh [--quick] [--out DIR] [--build DIR] [--data_dir DIR]
#
# Runs, in this order, all on this host over loopback TCP:
#   1. bench/ps_apply/ps_apply_bench   ps apply vs a[i] += b[i]      -> ps_apply.{txt,json}
#   2. bench/transport/rt_bench        READ/WRITE/FETCH_ADD round trips of the
#                                      transport vs raw TCP, up to the mlp
#                                      shard's buffer size, unpinned (for the
#                                      scaling model)                  -> rt_bench.{txt,json}
#      and again pinned, 4 sizes: issue 2's vs-raw-tcp figure        -> rt_bench_pinned.{txt,json}
#   3. bench/step/step_bench.py        step anatomy, sync vs async, transport
#                                      reference (tcp_rr), convergence,
#                                      stragglers                      -> step_bench.json, runs/
#   4. bench/step/report.py            tables and gnuplot PNGs         -> report.{txt,md,json}, plots/
# --quick: fewer configurations, steps and repetitions (measured: docs/benchmarks.md).
# Default OUT: ${TMPDIR:-/tmp}/rdmaps-bench/<UTC time>.  Exit status: 0 when every
# part ran; 1 when a part failed (what failed is printed); 2 on bad flags.
# Needs: a build (cmake -S . -B build && cmake --build build -j2), python3
# (standard library only), gnuplot, MNIST in --data_dir (default data/mnist).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
quick=""; out=""; build="$here/build"; data="$here/data/mnist"
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--out) out=${2:?--out needs a directory}; shift ;;
	--out=*) out=${1#--out=} ;;
	--build) build=${2:?--build needs a directory}; shift ;;
	--build=*) build=${1#--build=} ;;
	--data_dir) data=${2:?--data_dir needs a directory}; shift ;;
	--data_dir=*) data=${1#--data_dir=} ;;
	-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ -d "$data" ] || { echo "bench/run.sh: --data_dir $data: no such directory (scripts/fetch-data.sh)" >&2; exit 2; }
for t in python3 gnuplot; do
	command -v $t >/dev/null || { echo "bench/run.sh: $t not found" >&2; exit 2; }
done
[ -n "$out" ] || out="${TMPDIR:-/tmp}/rdmaps-bench/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 ||
		{ echo "bench/run.sh: cmake failed, see $out/build.log" >&2; exit 1; }
fi
cmake --build "$build" -j2 --target rdmaps ps_apply_bench rt_bench tcp_rr eval_snapshots >>"$out/build.log" 2>&1 ||
	{ echo "bench/run.sh: build failed, see $out/build.log" >&2; exit 1; }

t0=$(date +%s.%N)
fail=()
echo "bench/run.sh: ${quick:+quick, }results in $out"
{ echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')";
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)";
  echo "tcp congestion control (system default, used by every task and reference): $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)";
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null) $(git -C "$here" status --porcelain 2>/dev/null | grep -q . && echo '(dirty)')";
  echo "started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; } >"$out/machine.txt"
cat "$out/machine.txt"

echo "== 1/4 ps apply"
if "$build/bench/ps_apply/ps_apply_bench" ${quick:+--quick} --json "$out/ps_apply.json" >"$out/ps_apply.txt" 2>&1; then
	tail -n +1 "$out/ps_apply.txt" | grep -E '^(what|stream|adam|sync|vec|vs-)' || true
else
	fail+=(ps_apply); cat "$out/ps_apply.txt"
fi

echo "== 2/4 transport round trips (rt_bench, tcp, unpinned like the tasks)"
# --max-size: the mlp shard's parameter buffer (64 B + 79520 floats), so a
# step's four operations can be added up from measured rows
iters=2000; [ -n "$quick" ] && iters=300
if "$build/bench/transport/rt_bench" --transport tcp --no-pin --op all --min-size 8 --max-size 318144 \
	--iters $iters --json "$out/rt_bench.json" >"$out/rt_bench.txt" 2>&1; then
	grep -E '^vs-raw' "$out/rt_bench.txt" | tail -4
else
	fail+=(rt_bench); tail -5 "$out/rt_bench.txt"
fi

echo "== 2b/4 transport vs raw TCP, pinned (issue 2's figure: client on CPU 0, servers on the last CPU)"
# unpinned, a row depends on whether the scheduler put a client and its
# server on one vCPU or on two (docs/benchmarks.md, "Not done")
if "$build/bench/transport/rt_bench" --transport tcp --op all --sizes 8,4096,65536,318144 \
	--iters $iters --json "$out/rt_bench_pinned.json" >"$out/rt_bench_pinned.txt" 2>&1; then
	grep -E '^vs-raw' "$out/rt_bench_pinned.txt"
else
	fail+=(rt_bench_pinned); tail -5 "$out/rt_bench_pinned.txt"
fi

echo "== 3/4 training runs (step_bench)"
python3 "$here/bench/step/step_bench.py" ${quick:+--quick} --build "$build" --data_dir "$data" \
	--out "$out" 2>&1 | tee "$out/step_bench.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail+=(step_bench)

echo "== 4/4 report"
if [ -f "$out/step_bench.json" ]; then
	python3 "$here/bench/step/report.py" "$out" >"$out/report.log" 2>&1 || { fail+=(report); cat "$out/report.log"; }
	[ -f "$out/report.txt" ] && cat "$out/report.txt"
else
	fail+=(report)
fi
t1=$(date +%s.%N)
el=$(echo "$t1 - $t0" | bc 2>/dev/null || python3 -c "print($t1-$t0)")
echo "suite wall time: $el s" | tee -a "$out/machine.txt"
if [ ${#fail[@]} -gt 0 ]; then
	echo "bench/run.sh: FAILED parts: ${fail[*]} (results so far in $out)"
	exit 1
fi
echo "bench/run.sh: done; $out/report.md, plots in $out/plots"
