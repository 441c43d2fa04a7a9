#!/usr/bin/env bash
# Fuzz tier (docs/hardening.md): fuzz/run.sh builds the four libFuzzer targets
# (fuzz_ckpt, fuzz_idx, fuzz_desc, fuzz_tcp_frame; clang, ASan+UBSan) and runs
# each for a bounded time.  A crash, a sanitizer report or a build failure
# fails the tier.  Builds and corpora live in build-fuzz/ (gitignored, kept
# between runs so the corpus grows).  Longer runs on demand:
#   TMPDIR=build-fuzz fuzz/run.sh 3600
# usage: scripts/fuzz-ci.sh [seconds-per-target]   (default 20)
# Last line: TIER fuzz passed=P failed=F skipped=S  (one count per target).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
if ! command -v "${CC:-clang}" >/dev/null; then
	echo "fuzz tier: no clang: skipped"; echo "TIER fuzz passed=0 failed=0 skipped=4"; exit 0
fi
mkdir -p build-fuzz
t0=$(date +%s)
CC=${CC:-clang} TMPDIR=$PWD/build-fuzz sh fuzz/run.sh "$secs" 2>&1 | tee build-fuzz/run.log
rc=${PIPESTATUS[0]}
P=$(grep -c '^run.sh: fuzz_[a-z_]* OK' build-fuzz/run.log)
F=$(grep -cE '^run.sh: fuzz_[a-z_]*(: build FAILED| CRASHED)|^run.sh: seed generation FAILED' build-fuzz/run.log)
[ "$rc" != 0 ] && [ "$F" = 0 ] && F=1
[ $((P + F)) = 0 ] && F=1
echo "fuzz tier: $P passed, $F failed, 0 skipped (${secs}s per target, $(( $(date +%s) - t0 ))s in all)"
echo "TIER fuzz passed=$P failed=$F skipped=0"
[ "$F" = 0 ]
