#!/bin/sh
# bench/step/vm_steps.sh: a small step-anatomy set for the SoftRoCE VM
# (POSIX sh + awk: busybox is all the VM has; no Python there).
#
#   vm_steps.sh RDMAPS_BIN DATA_DIR ADDR [OUT_DIR]
#
# Runs on ADDR, each configuration over --transport=rdma and then
# --transport=tcp (same VM, same run): mlp 1 ps W=1 sync, W=2 sync, W=2
# async; mlp 2 ps W=2 sync and async (p2_*); lstm 1 ps W=1 sync and W=2
# sync (lstm_*), the lstm with --batch_size=RDMAPS_VM_LSTM_BATCH (default
# 16: at batch 128 a step computes for tens of seconds under TCG; the bytes
# moved per step do not depend on the batch) and RDMAPS_VM_LSTM_STEPS steps
# (default 12).  RDMAPS_VM_SMALL=1 runs the mlp 1-ps set only.  Tasks are
# started by hand so that every worker has its own --metrics file; ports are
# random high ports checked free in /proc/net/tcp.  Steps per run:
# RDMAPS_VM_STEPS (default 40); RDMAPS_VM_TRANSPORTS (default "rdma tcp").
# The workers run RDMAPS_VM_WORKER_NICE (default 5, `rdmaps launch
# --worker_nice`'s default; 0 = none) nicer than the ps tasks, as launch
# and step_bench start them (busybox has renice, not nice: each worker's
# shell renices itself, then execs rdmaps, so every thread has it).  Warm-up per worker: the first 5 steps or
# the first 0.5 s, whichever ends first, are dropped (counted in the output);
# every later step is kept.  Prints one line per (run, phase):
#   STEP-ANATOMY <run> <transport> <phase> n=<kept> drop=<dropped> min= p50= avg= p99= max=  (us)
# and per phase the rdma/tcp p50 ratio of the same configuration:
#   STEP-RATIO <config> <phase> rdma_over_tcp_p50=<x>
# pullpush = pull + push of each step (the step's transport cost).  Then,
# the same bytes as plain TCP in this VM (bench/step/tcp_rr next to the
# rdmaps binary's build tree: one request/response, and --mode step):
#   STEP-VS-TCP <run> pullpush_p50=<us> tcp_rr_p50=<us> ratio=<x> tcp_step_p50=<us> ratio_step=<x>
# and, when RDMAPS_VM_PERFTEST_P50 names tier.sh's perftest_p50.txt with
# perftest figures at the step's sizes (read: round trip, write: one way):
#   STEP-VS-PERFTEST <run> pullpush_p50=<us> perftest_read_rtt=<us> perftest_write_oneway=<us> ratio=<x>
# The VM runs under TCG (emulated CPU): only ratios inside one run mean
# anything.  Exit 0 when every run finished, 1 otherwise, 2 on bad arguments.
bin=${1:?usage: vm_steps.sh RDMAPS_BIN DATA_DIR ADDR [OUT_DIR]}
data=${2:?data dir}
addr=${3:?address}
out=${4:-/tmp/rdmaps-vmsteps}
steps=${RDMAPS_VM_STEPS:-40}
transports=${RDMAPS_VM_TRANSPORTS:-rdma tcp}
wnice=${RDMAPS_VM_WORKER_NICE:-5}
case $wnice in ''|*[!0-9]*) false;; *) [ "$wnice" -le 19 ];; esac ||
	{ echo "vm_steps: RDMAPS_VM_WORKER_NICE=$wnice: expected 0..19" >&2; exit 2; }
[ -x "$bin" ] || { echo "vm_steps: $bin: not executable" >&2; exit 2; }
[ -d "$data" ] || { echo "vm_steps: $data: no such directory" >&2; exit 2; }
mkdir -p "$out" || exit 2
echo "vm_steps: workers at nice +$wnice from the ps tasks (RDMAPS_VM_WORKER_NICE)"

free_port() {
	while :; do
		p=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000 + 20000 ))
		hex=$(printf '%04X' "$p")
		if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -q ":$hex\$"; then
			echo "$p"
			return
		fi
	done
}

# host_list N: N comma-separated ADDR:PORT, each port free
host_list() {
	l=""
	k=0
	while [ $k -lt "$1" ]; do
		l="$l${l:+,}$addr:$(free_port)"
		k=$((k + 1))
	done
	echo "$l"
}

# run NAME TRANSPORT W SYNC(1|0) [MODEL P STEPS EXTRA_FLAGS]
run() {
	name=$1 tr=$2 W=$3 sync=$4 model=${5:-mlp} P=${6:-1} n=${7:-$steps} extra=${8:-}
	d="$out/$name"
	rm -rf "$d"; mkdir -p "$d"
	ps=$(host_list "$P")
	wk=$(host_list "$W")
	flags="--ps_hosts=$ps --worker_hosts=$wk --model=$model --data_dir=$data --transport=$tr --seed=1 --log_every=1000000 --timeout=300 $extra"
	if [ "$sync" = 1 ]; then flags="$flags --sync_replicas=True"; else n=$((n * W)); fi
	flags="$flags --train_steps=$n"
	pids=""
	i=0
	while [ $i -lt "$P" ]; do
		# shellcheck disable=SC2086
		"$bin" --job_name=ps --task_index=$i $flags >"$d/ps$i.log" 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
	i=0
	while [ $i -lt "$W" ]; do
		# shellcheck disable=SC2086
		sh -c '[ "$0" = 0 ] || renice -n "$0" -p $$ >/dev/null || exit 126; exec "$@"' "$wnice" \
			"$bin" --job_name=worker --task_index=$i $flags --metrics="$d/metrics.w$i.json" >"$d/worker$i.log" 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
	rc=0
	for p in $pids; do wait "$p" || rc=1; done
	if [ $rc != 0 ]; then
		echo "STEP-RUN-FAILED $name (logs in $d)"
		tail -3 "$d"/*.log
		return 1
	fi
	for ph in wait_us pull_us compute_us push_us total_us pullpush_us; do
		line=$(stats "$d" "$ph")
		echo "STEP-ANATOMY $name $tr ${ph%_us} $line"
		echo "$name ${ph%_us} $line" >>"$out/table.txt"
	done
}

# stats DIR PHASE -> "n= drop= min= p50= avg= p99= max=" over every worker's
# kept steps (warm-up rule above); percentiles nearest-rank
stats() {
	for f in "$1"/metrics.w*.json; do
		awk -v ph="$2" '
		function num(k,   r) { if (match($0, "\"" k "\":[-0-9.e+]+")) { r = substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3); return r + 0 } return -1 }
		{
			tot = num("wait_us") + num("pull_us") + num("compute_us") + num("push_us")
			tb = num("t") - tot / 1e6
			if (NR == 1) t0 = tb
			if (NR <= 5 && tb - t0 < 0.5) { print "D"; next }
			print (ph == "total_us" ? tot : ph == "pullpush_us" ? num("pull_us") + num("push_us") : num(ph))
		}' "$f"
	done | awk '
		$1 == "D" { drop++; next }
		{ v[++n] = $1 + 0; s += $1 }
		END {
			if (n == 0) { printf "n=0 drop=%d\n", drop; exit }
			# insertion sort: a few hundred samples at most
			for (i = 2; i <= n; i++) { x = v[i]; j = i - 1; while (j > 0 && v[j] > x) { v[j + 1] = v[j]; j-- } v[j + 1] = x }
			p50 = v[int(0.5 * n + 0.999999)]; p99 = v[int(0.99 * n + 0.999999)]
			printf "n=%d drop=%d min=%.1f p50=%.1f avg=%.1f p99=%.1f max=%.1f\n", n, drop, v[1], p50, s / n, p99, v[n]
		}'
}

# p50of RUN PHASE: the p50 of that row of table.txt
p50of() { awk -v r="$1" -v p="$2" '$1 == r && $2 == p { for (i = 3; i <= NF; i++) if ($i ~ /^p50=/) print substr($i, 5) }' "$out/table.txt"; }
: >"$out/table.txt"
fail=0
lb=${RDMAPS_VM_LSTM_BATCH:-16}
ls=${RDMAPS_VM_LSTM_STEPS:-12}
cfgs="w1_sync:1:1:mlp:1:$steps: w2_sync:2:1:mlp:1:$steps: w2_async:2:0:mlp:1:$steps:"
[ "${RDMAPS_VM_SMALL:-0}" = 1 ] ||
	cfgs="$cfgs p2_w2_sync:2:1:mlp:2:$steps: p2_w2_async:2:0:mlp:2:$steps: lstm_w1_sync:1:1:lstm:1:$ls:--batch_size=$lb lstm_w2_sync:2:1:lstm:1:$ls:--batch_size=$lb"
for cfg in $cfgs; do
	# shellcheck disable=SC2046
	set -- $(echo "$cfg" | tr ':' ' ')
	for tr in $transports; do
		echo "== vm_steps: $4 P=$5 $1 over $tr, $6 steps${7:+ ($7)}"
		run "$1_$tr" "$tr" "$2" "$3" "$4" "$5" "$6" "${7:-}" || fail=1
	done
	for ph in wait pull compute push total pullpush; do
		a=$(p50of "$1_rdma" "$ph")
		b=$(p50of "$1_tcp" "$ph")
		[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" -v c="$1" -v p="$ph" \
			'BEGIN { if (b > 0) printf "STEP-RATIO %s %s rdma_over_tcp_p50=%.2f (rdma %.1f us, tcp %.1f us)\n", c, p, a / b, a, b }'
	done
done

# The step's bytes (src/worker/worker.c, bench/step/step_bench.py shard_bytes):
# pull = 4 n + 8 (floats + fenced version READ), push = 4 n + 72 (floats,
# 64 B slot header, 8 B FETCH_ADD), n = the floats the ps serves.
n=$(sed -n 's/.*serving \([0-9][0-9]*\) floats.*/\1/p' "$out/w1_sync_${transports%% *}/ps0.log" 2>/dev/null | head -1)
rr=$(cd "$(dirname "$bin")/../.." 2>/dev/null && pwd)/bench/step/tcp_rr
if [ -n "$n" ] && [ -x "$rr" ]; then
	pull_b=$((4 * n + 8)); push_b=$((4 * n + 72))
	# the step-shaped reference idles between its steps as long as the
	# W=1 sync run computed (its compute p50, 0.2-1.2 s under TCG), as a
	# worker does; --budget-ms keeps it to about 30 s (at least 20 samples)
	gap=$(p50of "w1_sync_${transports%% *}" compute); gap=${gap%.*}; gap=${gap:-0}
	echo "== vm_steps: plain TCP references in this VM: tcp_rr --req $push_b --resp $pull_b (rr, then --mode step --gap-us $gap)"
	rrp=$("$rr" --req "$push_b" --resp "$pull_b" --iters 300 --warmup 20 | awk 'NF == 10 && $1 ~ /^[0-9]+$/ { print $5 }')
	sto=$("$rr" --req "$push_b" --resp "$pull_b" --mode step --iters 300 --warmup 20 --gap-us "$gap" --budget-ms 30000 | awk 'NF == 10 && $1 ~ /^[0-9]+$/ { print $5, $3 }')
	stp=${sto%% *}; stn=${sto#* }
	echo "TCP-RR-P50 rr=$rrp step=$stp step_gap_us=$gap step_samples=$stn (us, 127.0.0.1 in the VM)"
	for cfg in w1_sync w2_sync w2_async; do
		for tr in $transports; do
			pp=$(p50of "${cfg}_$tr" pullpush)
			[ -n "$pp" ] && [ -n "$rrp" ] && [ -n "$stp" ] && awk -v r="${cfg}_$tr" -v a="$pp" -v b="$rrp" -v c="$stp" \
				'BEGIN { printf "STEP-VS-TCP %s pullpush_p50=%.1f tcp_rr_p50=%.1f ratio=%.2f tcp_step_p50=%.1f ratio_step=%.2f\n", r, a, b, a / b, c, a / c }'
		done
	done
	pf=${RDMAPS_VM_PERFTEST_P50:-}
	if [ -n "$pf" ] && [ -f "$pf" ]; then
		prd=$(awk -v s="$pull_b" '$1 == "read" && $2 == s { print $3 }' "$pf")
		pwr=$(awk -v s="$push_b" '$1 == "write" && $2 == s { print $3 }' "$pf")
		if [ -n "$prd" ] && [ -n "$pwr" ]; then
			for cfg in w1_sync w2_sync w2_async; do
				pp=$(p50of "${cfg}_rdma" pullpush)
				[ -n "$pp" ] && awk -v r="${cfg}_rdma" -v a="$pp" -v b="$prd" -v c="$pwr" \
					'BEGIN { printf "STEP-VS-PERFTEST %s pullpush_p50=%.1f perftest_read_rtt=%.1f perftest_write_oneway=%.1f ratio=%.2f\n", r, a, b, c, a / (b + c) }'
			done
		else
			echo "STEP-VS-PERFTEST not measured: no perftest figures at read $pull_b / write $push_b in $pf"
		fi
	fi
else
	echo "STEP-VS-TCP not measured: $( [ -n "$n" ] && echo "no $rr" || echo "no 'serving N floats' in the ps log")"
fi
exit $fail
