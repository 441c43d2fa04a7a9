#!/usr/bin/env bash
# The whole test suite: host tiers (ctest labels unit|tcp) in build/, then the
# rdma tier (ci/softroce/run test: on the host if it has an RDMA device or can
# load rdma_rxe, else in a SoftRoCE QEMU VM). Ends with one line
# "N passed, N failed, N skipped" summed over all tiers; exit non-zero if
# anything failed.
# Env: BUILD_DIR (default build), RDMAPS_SKIP_DEPS=1, RDMAPS_SKIP_RDMA=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bdir=${BUILD_DIR:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }

if [ "${RDMAPS_SKIP_DEPS:-0}" != 1 ]; then
	echo "== install-deps"
	bash scripts/install-deps.sh
fi

echo "== data (scripts/fetch-data.sh data) [$(el)]"
bash scripts/fetch-data.sh data || { echo "fetching MNIST failed"; echo "0 passed, 1 failed"; exit 1; }

echo "== build ($bdir) [$(el)]"
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; echo "cmake failed"; echo "0 passed, 1 failed"; exit 1; }
if ! cmake --build "$bdir" -j"$(nproc)" >"$tmp/build.log" 2>&1; then
	tail -60 "$tmp/build.log"; echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi

# counts from a ctest log: sets P F S
count() {
	local re='^ *[0-9]+/[0-9]+ Test +#[0-9]+:' tot
	tot=$(grep -cE "$re" "$1" || true)
	P=$(grep -E "$re" "$1" | grep -c ' Passed ' || true)
	S=$(grep -E "$re" "$1" | grep -c 'Skipped' || true)
	F=$(( tot - P - S ))
}

echo "== host tiers: ctest -L 'unit|tcp' [$(el)]"
set +e
ctest --test-dir "$bdir" -L 'unit|tcp' --output-on-failure -j"$(nproc)" 2>&1 | tee "$tmp/host.log"
hrc=${PIPESTATUS[0]}
set -e
count "$tmp/host.log"; hp=$P; hf=$F; hs=$S
if [ "$hrc" != 0 ] && [ "$hf" = 0 ]; then hf=1; fi
echo "host tiers: $hp passed, $hf failed, $hs skipped (ctest rc=$hrc) [$(el)]"

rp=0; rf=0; rs=0; rrc=0
if [ "${RDMAPS_SKIP_RDMA:-0}" = 1 ]; then
	echo "== rdma tier: skipped (RDMAPS_SKIP_RDMA=1)"
else
	echo "== rdma tier: ci/softroce/run test [$(el)]"
	set +e
	bash ci/softroce/run test 2>&1 | tee "$tmp/rdma.log"
	rrc=${PIPESTATUS[0]}
	set -e
	line=$(grep -a '^RDMA-TIER passed=' "$tmp/rdma.log" | tail -1 || true)
	if [ -n "$line" ]; then
		rp=$(echo "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
		rf=$(echo "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
		rs=$(echo "$line" | sed 's/.*skipped=\([0-9]*\).*/\1/')
	fi
	if [ "$rrc" != 0 ] && [ "$rf" = 0 ]; then rf=1; fi
	echo "rdma tier: $rp passed, $rf failed, $rs skipped (rc=$rrc) [$(el)]"
fi

tp=$((hp + rp)); tf=$((hf + rf)); ts=$((hs + rs))
echo "== total [$(el)]: host(unit|tcp) $hp/$hf/$hs, rdma $rp/$rf/$rs (passed/failed/skipped)"
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
