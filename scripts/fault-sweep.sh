#!/usr/bin/env bash
# Fault-injection sweep (docs/hardening.md).  Builds rdmaps with
# -DRDMAPS_ASAN=ON -DRDMAPS_FAULT_INJECTION=ON in build-fault/, measures how
# many wrapped fallible calls (src/common/fault.c) each task of a small tcp
# cluster makes (1 ps + 2 workers, sync, 3 steps), then for each target task
# and each N runs the cluster with RDMAPS_FAULT_N=N in that task only.
#
# Per run, the target task must either succeed or exit non-zero with an error
# message (a line other than the injection notice); no task may crash (signal),
# hang (killed by the 60 s bound), or print a sanitizer report (ASan, LSan
# leaks, UBSan).  When the target failed, the other tasks get 20 s to notice
# on their own; a task still running then is stopped with SIGTERM and counted
# as "waited" (reported, not a failure: see docs/hardening.md).
#
# usage: scripts/fault-sweep.sh [--stride K] [--targets "ps w0 w1"] [--data DIR]
#   --stride K: N = 1, 1+K, 1+2K, ... (default 1 = the full sweep)
# Last line: TIER fault passed=P failed=F skipped=S  (one count per run).
set -uo pipefail
cd "$(dirname "$0")/.."
stride=1; targets="ps w0 w1"; data=data/mnist
while [ $# -gt 0 ]; do
	case $1 in
	--stride) stride=$2; shift 2 ;;
	--targets) targets=$2; shift 2 ;;
	--data) data=$2; shift 2 ;;
	*) echo "usage: scripts/fault-sweep.sh [--stride K] [--targets \"ps w0 w1\"] [--data DIR]"; exit 2 ;;
	esac
done
case $stride in ''|*[!0-9]*|0) echo "fault-sweep: --stride must be a positive integer, not '$stride'"; exit 2 ;; esac
bdir=build-fault
mkdir -p "$bdir"
tier_fail() { echo "fault tier: $*"; echo "TIER fault passed=0 failed=1 skipped=0"; exit 1; }
if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
	echo "fault tier: no MNIST in $data: skipped"; echo "TIER fault passed=0 failed=0 skipped=1"; exit 0
fi
t0=$(date +%s)
cmake -S . -B "$bdir" -DRDMAPS_ASAN=ON -DRDMAPS_FAULT_INJECTION=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	>"$bdir/config.log" 2>&1 || { cat "$bdir/config.log"; tier_fail "cmake failed"; }
cmake --build "$bdir" -j"$(nproc)" --target rdmaps >"$bdir/build.log" 2>&1 \
	|| { tail -40 "$bdir/build.log"; tier_fail "build failed"; }
bin=$bdir/src/cli/rdmaps
tb=$(date +%s)
echo "== fault: build $((tb - t0))s"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run TARGET N -> sets rc_ps rc_w0 rc_w1 and the logs in $out/{ps,w0,w1}.log
run() {
	local target=$1 n=$2 port hosts t pid_ps pid_w0 pid_w1
	port=$(free_port)
	hosts="--ps_hosts=127.0.0.1:$port --worker_hosts=127.0.0.1:1,127.0.0.1:2"
	# --recovery_timeout=5: a worker whose ps gave up (its own --timeout=5)
	# retries for 5 s, not 60, and then exits on its own with a message
	local common="$hosts --transport=tcp --sync_replicas --train_steps=3 --timeout=5 --recovery_timeout=5 --log_every=1"
	for t in ps w0 w1; do
		local fn=0
		[ "$t" = "$target" ] && fn=$n
		case $t in
		ps) RDMAPS_FAULT_N=$fn timeout -s KILL 60 "$bin" --job_name=ps --task_index=0 $common >"$out/$t.log" 2>&1 & pid_ps=$! ;;
		w0) RDMAPS_FAULT_N=$fn timeout -s KILL 60 "$bin" --job_name=worker --task_index=0 $common --data_dir="$data" >"$out/$t.log" 2>&1 & pid_w0=$! ;;
		w1) RDMAPS_FAULT_N=$fn timeout -s KILL 60 "$bin" --job_name=worker --task_index=1 $common --data_dir="$data" >"$out/$t.log" 2>&1 & pid_w1=$! ;;
		esac
	done
	local tp rct=0
	waited=""
	if [ "$target" != none ]; then
		eval "tp=\$pid_$target"
		wait "$tp"; eval "rc_$target=$?"
		eval "rct=\$rc_$target"
	fi
	for t in ps w0 w1; do
		[ "$t" = "$target" ] && continue
		local p; eval "p=\$pid_$t"
		if [ "$rct" != 0 ]; then
			local k=0
			while kill -0 "$p" 2>/dev/null && [ $k -lt 200 ]; do sleep 0.1; k=$((k + 1)); done
			if kill -0 "$p" 2>/dev/null; then
				kill -TERM "$p" 2>/dev/null; waited="$waited $t"
			fi
		fi
		wait "$p"; eval "rc_$t=$?"
	done
}

# count the calls of each task in a clean run
RDMAPS_FAULT_REPORT=1 run none 0
for t in ps w0 w1; do
	eval "c=\$rc_$t"
	[ "$c" = 0 ] || { cat "$out/$t.log"; tier_fail "the clean run failed ($t exited $c)"; }
	c=$(sed -n 's/^rdmaps-fault: calls #\([0-9]*\)$/\1/p' "$out/$t.log")
	# one positive count, or the sweep below would run nothing and pass
	case $c in ''|*[!0-9]*|0) cat "$out/$t.log"; tier_fail "the clean run of $t reported no call count ('rdmaps-fault: calls #N'): got '$c'" ;; esac
	eval "calls_$t=$c"
done
echo "== fault: clean run: wrapped calls: ps $calls_ps, worker0 $calls_w0, worker1 $calls_w1"

P=0; F=0; W=0; Ok=0
san='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
for target in $targets; do
	eval "max=\$calls_$target"
	n=1
	while [ "$n" -le "$max" ]; do
		run "$target" "$n"
		bad=""
		for t in ps w0 w1; do
			eval "c=\$rc_$t"
			if grep -qE "$san" "$out/$t.log"; then bad="$bad $t:sanitizer-report"; fi
			if [ "$c" = 137 ]; then bad="$bad $t:hang(killed-after-60s)";
			elif [ "$c" -gt 128 ] && ! echo "$waited" | grep -qw "$t"; then bad="$bad $t:signal$((c - 128))"; fi
		done
		eval "c=\$rc_$target"
		site=$(sed -n 's/^rdmaps-fault: failing call (\(.*\)) #.*/\1/p' "$out/$target.log")
		msg=$(grep -v '^rdmaps-fault:\|^job name\|^task index\|^ps 0: \(placement\|serving\|replicas\|transport\|parameters\|done\)\|^Worker .*: \(Initializing\|Waiting\|Session\)' "$out/$target.log" \
			| grep -iE 'error|fail|cannot|refused|timed out|memory|invalid|bad|missing|no ' | head -1)
		if [ "$c" != 0 ] && [ -z "$msg" ]; then bad="$bad $target:exit$c-without-message"; fi
		[ "$c" = 0 ] && Ok=$((Ok + 1))
		[ -n "$waited" ] && W=$((W + 1))
		line="N=$n $target [${site:-no call failed}] rc ps=$rc_ps w0=$rc_w0 w1=$rc_w1${waited:+ waited:$waited}: ${msg:-(succeeded)}"
		if [ -n "$bad" ]; then
			F=$((F + 1)); echo "FAIL $line:$bad"
			for t in ps w0 w1; do echo "--- $t:"; grep -vE '^\[|^ps 0: placement|^  ' "$out/$t.log" | tail -15; done
		else
			P=$((P + 1)); echo "ok   $line"
		fi
		n=$((n + stride))
	done
done
echo "fault tier: $P runs passed, $F failed (target succeeded despite the fault: $Ok; peers stopped by SIGTERM after 20 s: $W) in $(( $(date +%s) - t0 ))s"
echo "TIER fault passed=$P failed=$F skipped=0"
[ $((P + F)) -gt 0 ] || { echo "fault tier: no fault run at all"; exit 1; }
[ "$F" = 0 ]
