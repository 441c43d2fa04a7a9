#!/usr/bin/env bash
# bench/step/ab.sh: compare two builds of rdmaps on the same step_bench grid,
# alternating A's and B's whole grid round by round (and which goes first)
# so that background load hits both alike.
#
#   bench/step/ab.sh OUT BUILD_A BUILD_B GRID [ROUNDS] [DATA_DIR]
#
# GRID is step_bench's --grid (MODEL:P:W:REPS,...).  Each round runs
# step_bench --only anatomy with BUILD_A into OUT/a<round> and with BUILD_B
# into OUT/b<round>, A first on odd rounds and B first on even ones
# (default 3 rounds).  Then bench/step/ab_report.py OUT
# prints, per configuration and build, the median over the runs of the phase
# p50s, the paired pull+push / tcp_rr ratios and the steady-window rates.
# AB_FLAGS_A / AB_FLAGS_B (environment, space-separated): extra rdmaps flags
# for A's / B's runs (step_bench --rdmaps_flag), e.g. one build with and
# without a flag: AB_FLAGS_B=--ps_spin_us=300 ab.sh OUT build build GRID
# AB_BENCH_A / AB_BENCH_B: extra step_bench flags for A's / B's runs, e.g.
# workers as nice as the ps against step_bench's default (+5, launch's):
# AB_BENCH_A=--worker_nice=0 ab.sh OUT build build GRID
# Exit: 0, 1 when a step_bench run failed (its output is kept), 2 bad usage.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 4 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out=$1; a=$2; b=$3; grid=$4; rounds=${5:-3}; data=${6:-$here/data/mnist}
case $rounds in ''|*[!0-9]*|0) echo "ab.sh: ROUNDS must be a positive integer" >&2; exit 2;; esac
for d in "$a" "$b"; do
	[ -x "$d/src/cli/rdmaps" ] || { echo "ab.sh: $d/src/cli/rdmaps not built" >&2; exit 2; }
done
mkdir -p "$out" || exit 2
fail=0
for r in $(seq 1 "$rounds"); do
	# A first on odd rounds, B first on even ones, so that a first-position
	# effect (a colder machine, a build's page cache) hits both alike
	order="a b"
	[ $((r % 2)) -eq 0 ] && order="b a"
	for v in $order; do
		bd=$a; fl=${AB_FLAGS_A:-}; bf=${AB_BENCH_A:-}
		[ $v = b ] && { bd=$b; fl=${AB_FLAGS_B:-}; bf=${AB_BENCH_B:-}; }
		extra=()
		for f in $fl; do extra+=("--rdmaps_flag=$f"); done
		for f in $bf; do extra+=("$f"); done
		python3 "$here/bench/step/step_bench.py" --build "$bd" --data_dir "$data" --out "$out/$v$r" \
			--only anatomy --grid "$grid" "${extra[@]}" >"$out/$v$r.log" 2>&1 || { echo "ab.sh: $out/$v$r failed (see $out/$v$r.log)"; fail=1; }
	done
done
python3 "$here/bench/step/ab_report.py" "$out"
exit $fail
