#!/bin/sh
# Build the libFuzzer targets with clang (ASan+UBSan) and run each for a
# bounded time.  Usage: fuzz/run.sh [seconds-per-target]  (default 30)
# Builds and corpora live in ${TMPDIR:-/tmp}/rdmaps-fuzz (never the tree).
# Exit status: 0 if every target ran its time without a crash, 1 otherwise.
set -u
secs=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
out=${TMPDIR:-/tmp}/rdmaps-fuzz
CC=${CC:-clang}
mkdir -p "$out/seeds" "$out/corpus" "$out/artifacts" || exit 1
CF="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -I$src/src -I$src/src/rdma"
S=$src/src

# target  sources (beyond fuzz/<target>.c)  libs
targets="fuzz_ckpt fuzz_idx fuzz_desc fuzz_tcp_frame"
srcs_fuzz_ckpt="$S/ps/checkpoint.c $S/common/status.c -lz"
srcs_fuzz_idx="$S/kernels/idx.c $S/common/status.c -lz"
srcs_fuzz_desc="$S/rdma/desc.c $S/common/status.c"
srcs_fuzz_tcp_frame="$S/rdma/tcp_wire.c $S/rdma/clock.c $S/rdma/desc.c $S/common/status.c"

fail=0
for t in $targets; do
	eval "extra=\$srcs_$t"
	# shellcheck disable=SC2086
	if ! $CC $CF "$here/$t.c" $extra -o "$out/$t"; then
		echo "run.sh: $t: build FAILED"; fail=1
	fi
done
# shellcheck disable=SC2086
$CC -g -O1 -fsanitize=address,undefined -D_GNU_SOURCE -I$S -I$S/rdma "$here/mkseeds.c" \
	$S/ps/checkpoint.c $S/rdma/desc.c $S/rdma/tcp_wire.c $S/rdma/clock.c $S/common/status.c -lz -o "$out/mkseeds" &&
	"$out/mkseeds" "$out/seeds" || { echo "run.sh: seed generation FAILED"; fail=1; }

for t in $targets; do
	[ -x "$out/$t" ] || continue
	mkdir -p "$out/corpus/$t" "$out/seeds/$t"
	echo "run.sh: $t for ${secs}s"
	if "$out/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 \
		"$out/corpus/$t" "$out/seeds/$t" >"$out/$t.log" 2>&1; then
		echo "run.sh: $t OK: $(grep -E '^stat::number_of_executed_units' "$out/$t.log" | awk '{print $2}') execs, $(grep -oE 'cov: [0-9]+' "$out/$t.log" | tail -1)"
	else
		echo "run.sh: $t CRASHED (log $out/$t.log, artifacts $out/artifacts/$t-*)"
		grep -E 'ERROR|SUMMARY|runtime error' "$out/$t.log" | head -5
		fail=1
	fi
done
exit $fail
