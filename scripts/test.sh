#!/usr/bin/env bash
# The whole test suite: host tiers (ctest labels unit|tcp|quick: quick = the mlp accuracy tests, ~10 s) in build/, then the
# rdma tier (ci/softroce/run test: on the host if it has an RDMA device or can
# load rdma_rxe, else in a SoftRoCE QEMU VM). Ends with one line
# "N passed, N failed, N skipped" summed over all tiers; exit non-zero if
# anything failed.
# Then the hardening tiers (docs/hardening.md), each with its own counts:
# asan (host tests under ASan+UBSan), tsan (tcp tests under TSan), fuzz
# (libFuzzer targets, 20 s each), fault (fault-injection sweep, stride 8).
# Env: BUILD_DIR (default build), RDMAPS_SKIP_DEPS=1, RDMAPS_SKIP_RDMA=1,
# RDMAPS_SKIP_HARDEN=1 (no asan/tsan/fuzz/fault tiers), RDMAPS_FUZZ_SECS (20),
# RDMAPS_FAULT_STRIDE (8; 1 = the full sweep).
set -euo pipefail
cd "$(dirname "$0")/.."
bdir=${BUILD_DIR:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 ))s"; }

if [ "${RDMAPS_SKIP_DEPS:-0}" != 1 ]; then
	echo "== install-deps"
	bash scripts/install-deps.sh || { echo "installing the Debian packages failed"; echo "0 passed, 1 failed"; exit 1; }
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

echo "== host tiers: ctest -L 'unit|tcp|quick' [$(el)]"
set +e
ctest --test-dir "$bdir" -L 'unit|tcp|quick' --output-on-failure -j"$(nproc)" 2>&1 | tee "$tmp/host.log"
hrc=${PIPESTATUS[0]}
set -e
count "$tmp/host.log"; hp=$P; hf=$F; hs=$S
if [ "$hrc" != 0 ] && [ "$hf" = 0 ]; then hf=1; fi
# a run that found no test at all (a broken build tree, labels lost) is no pass
if [ $((hp + hf + hs)) = 0 ]; then echo "host tiers: ctest ran no test"; hf=1; fi
echo "host tiers: $hp passed, $hf failed, $hs skipped (ctest rc=$hrc) [$(el)]"

# A tier: a command whose output ends with a count line "<MARKER> passed=P
# failed=F skipped=S" (the rdma tier: "RDMA-TIER ...", the hardening tiers:
# "TIER <name> ..."); a non-zero exit without a failure counted is a failure.
xp=0; xf=0; xs=0; xsum=""
tier() { # name marker command...
	local name=$1 marker=$2 line p f s rc
	shift 2
	echo "== $name tier: $* [$(el)]"
	set +e
	"$@" 2>&1 | tee "$tmp/$name.log"
	rc=${PIPESTATUS[0]}
	set -e
	line=$(grep -a "^$marker passed=" "$tmp/$name.log" | tail -1 || true)
	p=0; f=0; s=0
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
		f=$(echo "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
		s=$(echo "$line" | sed 's/.*skipped=\([0-9]*\).*/\1/')
	fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	# a tier that ended without its count line said nothing about its tests
	if [ -z "$line" ] && [ "$f" = 0 ]; then echo "$name tier: no '$marker passed=' line"; f=1; fi
	echo "$name tier: $p passed, $f failed, $s skipped (rc=$rc) [$(el)]"
	xp=$((xp + p)); xf=$((xf + f)); xs=$((xs + s)); xsum="$xsum, $name $p/$f/$s"
}

if [ "${RDMAPS_SKIP_RDMA:-0}" = 1 ]; then
	echo "== rdma tier: skipped (RDMAPS_SKIP_RDMA=1)"
else
	tier rdma RDMA-TIER bash ci/softroce/run test
fi

# hardening tiers
if [ "${RDMAPS_SKIP_HARDEN:-0}" = 1 ]; then
	echo "== hardening tiers: skipped (RDMAPS_SKIP_HARDEN=1)"
else
	tier asan "TIER asan" bash scripts/sanitizers.sh asan
	tier tsan "TIER tsan" bash scripts/sanitizers.sh tsan
	tier fuzz "TIER fuzz" bash scripts/fuzz-ci.sh "${RDMAPS_FUZZ_SECS:-20}"
	tier fault "TIER fault" bash scripts/fault-sweep.sh --stride "${RDMAPS_FAULT_STRIDE:-8}"
fi

tp=$((hp + xp)); tf=$((hf + xf)); ts=$((hs + xs))
echo "== total [$(el)]: host(unit|tcp|quick) $hp/$hf/$hs$xsum (passed/failed/skipped)"
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
