#!/usr/bin/env bash
# Sanitizer tiers (docs/hardening.md).  Usage: scripts/sanitizers.sh asan|tsan
#   asan: cmake -DRDMAPS_ASAN=ON in build-asan/ (ASan + UBSan, UBSan aborts on
#         error), then ctest -L 'unit|tcp' (the host tests).
#   tsan: cmake -DRDMAPS_TSAN=ON in build-tsan/, then ctest -L tcp (but
#         train_tcp_lstm and train_tcp_torn_read), with scripts/tsan.supp.
# A test fails on a sanitizer report through its exit status; in addition the
# whole verbose ctest log is searched for reports (a report from a child
# process whose exit status a test script ignored still fails the tier).
# Prints the failed tests' output, the reports, and last the line
#   TIER <name> passed=P failed=F skipped=S
# Exit non-zero if anything failed.  Env: RDMAPS_SAN_JOBS (ctest -j, default nproc).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
mode=${1:-}
case $mode in
asan) bdir=build-asan; opt=-DRDMAPS_ASAN=ON; labels='unit|tcp'; exclude='^$' ;;
tsan) bdir=build-tsan; opt=-DRDMAPS_TSAN=ON; labels='tcp'
	# Left out, measured: the LSTM run has the sync run's threads and protocol,
	# only a bigger model (226 s under TSan).  torn_read races READs against
	# the writer on every payload byte by design (the seqlock test): each pair
	# is a suppressed report TSan must symbolize; `torn_read tcp 100` did not
	# finish in 100 s (3000 reads: ctest timeout 120 s, twice).
	exclude='train_tcp_lstm|train_tcp_torn_read' ;;
*) echo "usage: scripts/sanitizers.sh asan|tsan"; exit 2 ;;
esac
jobs=${RDMAPS_SAN_JOBS:-$(nproc)}
log=$bdir/sanitizer-ctest.log
t0=$(date +%s)
mkdir -p "$bdir"
tier_fail() { echo "$mode tier: $*"; echo "TIER $mode passed=0 failed=1 skipped=0"; exit 1; }

# halt on the first error; leaks are errors (LSan is part of ASan)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}

echo "== $mode: build ($bdir, $opt)"
cmake -S . -B "$bdir" "$opt" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$bdir/config.log" 2>&1 \
	|| { cat "$bdir/config.log"; tier_fail "cmake failed"; }
if ! cmake --build "$bdir" -j"$(nproc)" >"$bdir/build.log" 2>&1; then
	tail -40 "$bdir/build.log"; tier_fail "build failed"
fi
tb=$(date +%s)
echo "== $mode: ctest -L '$labels' (build $((tb - t0))s)"
ctest --test-dir "$bdir" -L "$labels" -E "$exclude" -V -j"$jobs" >"$log" 2>&1
crc=$?
re='^ *[0-9]+/[0-9]+ Test +#[0-9]+:'
grep -E "$re" "$log"
tot=$(grep -cE "$re" "$log")
P=$(grep -E "$re" "$log" | grep -c ' Passed ')
S=$(grep -E "$re" "$log" | grep -c 'Skipped\|Not Run (Disabled)')
F=$((tot - P - S))
# failed tests: print their output (ctest -V prefixes each line with "N: ")
for n in $(grep -E "$re" "$log" | grep -v ' Passed \|Skipped\|Not Run (Disabled)' | sed -E 's/.*Test +#([0-9]+):.*/\1/'); do
	echo "--- output of test #$n (last 60 lines):"
	grep -E "^$n: " "$log" | tail -60
	# the verdict lines, wherever they are in a long output
	if grep -qE "^$n: .*FAIL" "$log"; then
		echo "--- FAIL lines of test #$n:"
		grep -E "^$n: .*FAIL" "$log" | head -10
	fi
done
# sanitizer reports anywhere (also in tests that passed)
pat='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer'
nrep=$(grep -cE "$pat" "$log")
if [ "$nrep" -gt 0 ]; then
	echo "--- $nrep sanitizer report line(s) in $log:"
	grep -E "$pat" "$log" | sort | uniq -c | head -20
	for n in $(grep -E "$pat" "$log" | sed -nE 's/^([0-9]+): .*/\1/p' | sort -u); do
		if ! grep -E "$re" "$log" | grep -E "Test +#$n:" | grep -qv ' Passed '; then
			echo "test #$n passed but printed a sanitizer report: counted as failed"
			P=$((P - 1)); F=$((F + 1))
		fi
	done
fi
[ "$crc" != 0 ] && [ "$F" = 0 ] && F=1
[ "$tot" = 0 ] && { echo "$mode tier: no test ran"; F=1; }
echo "$mode tier: $P passed, $F failed, $S skipped (ctest rc=$crc, build $((tb - t0))s, tests $(( $(date +%s) - tb ))s; full log $log)"
echo "TIER $mode passed=$P failed=$F skipped=$S"
[ "$F" = 0 ]
