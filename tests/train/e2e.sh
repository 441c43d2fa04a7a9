#!/bin/sh
# End-to-end training runs through `rdmaps launch` (POSIX sh: also runs under
# busybox inside the SoftRoCE VM).
# usage: e2e.sh RDMAPS_BIN TRANSPORT DATA_DIR CASE
#   CASE: sync | async | backup | over_aggregate | lstm | ps_spin | ps_progress |
#         worker_progress | slow_compute | small_ops | own_name | ipv6 |
#         clock_step LIB | cli
# Exit 0 pass, 1 fail, 77 skipped (no data, or no RDMA device for rdma).
bin=$1; tr=$2; data=$3; case=$4
out=${TMPDIR:-/tmp}/rdmaps-e2e-$$-$case.log
mdir=
fail() { echo "FAIL: $*"; echo "--- output:"; tail -40 "$out"; rm -f "$out"; [ -n "$mdir" ] && rm -rf "$mdir"; exit 1; }

# bg_launch [setsid] FLAGS...: a 1 ps + 2 workers sync tcp job through
# `rdmaps launch` in the background (in a session of its own with setsid),
# its output in $out, its pid in lp; returns once training began (up to
# 60 s).  $out is removed first: a previous run's "Training begins" in it
# ended the wait at once, and a signal then reached a launcher that had not
# started (CI of 8aff700, a loaded machine: "Terminated", an empty log)
bg_launch() {
	rm -f "$out"
	if [ "$1" = setsid ]; then
		shift
		setsid "$bin" launch --ps=1 --workers=2 --sync_replicas --transport=tcp --data_dir="$data" "$@" >"$out" 2>&1 &
	else
		"$bin" launch --ps=1 --workers=2 --sync_replicas --transport=tcp --data_dir="$data" "$@" >"$out" 2>&1 &
	fi
	lp=$!
	k=0
	while ! grep -qs "Training begins" "$out" && [ $k -lt 600 ]; do sleep 0.1; k=$((k + 1)); done
}
# gone PID SECS: 0 once PID has exited, 1 if it still runs after SECS s
gone() {
	k=0
	while kill -0 "$1" 2>/dev/null && [ $k -lt $(($2 * 10)) ]; do sleep 0.1; k=$((k + 1)); done
	! kill -0 "$1" 2>/dev/null
}
# ps_listening OFFSET NPS INDEX FLAGS...: ps task INDEX of NPS on ports p0,
# p0 + 1, ... (below 16384: launch draws its ports from the 16384 ports
# below the ephemeral range, 32768-60999 here, connect() from inside it, so
# neither can take them; OFFSET keeps two callers apart), 3 tries; returns
# once it listens.  Sets p0, pp (its pid); its log is $pslog.  The ps
# hosts are $ps_host (default 127.0.0.1; "[::1]", a name).
ps_listening() {
	off_=$1 nps_=$2 idx_=$3; shift 3
	h_=${ps_host:-127.0.0.1}
	for try in 1 2 3; do
		p0=$((10000 + ($$ * 7 + try * 131 + off_) % 6000))
		psh_=$h_:$p0 k=1
		while [ $k -lt "$nps_" ]; do psh_=$psh_,$h_:$((p0 + k)); k=$((k + 1)); done
		rm -f "$pslog" # (a previous try's "cannot listen" must not end the wait)
		"$bin" --task_index="$idx_" --ps_hosts="$psh_" "$@" >"$pslog" 2>&1 &
		pp=$!
		k=0
		while ! grep -qs "listening on\|cannot listen" "$pslog" && [ $k -lt 100 ]; do sleep 0.1; k=$((k + 1)); done
		grep -q "listening on" "$pslog" && return
		wait $pp
	done
}

# two_workers PS_ADDR FLAGS...: workers 0 and 1 of the ps that
# ps_listening started ($pp, on port $p0), reaching it at PS_ADDR:$p0, 50
# steps each; waits for all three, gathers their output in $out and fails
# unless every one exited 0.
two_workers() {
	psa_=$1; shift
	for i in 0 1; do
		"$bin" --job_name=worker --task_index=$i --ps_hosts="$psa_:$p0" --timeout=60 --train_steps=50 \
			--log_every=25 --data_dir="$data" "$@" >"$out.w$i" 2>&1 &
		eval wp$i=$!
	done
	wait $wp0; r0=$?; wait $wp1; r1=$?; wait $pp; rp=$?
	cat "$pslog" "$out.w0" "$out.w1" >"$out"; rm -f "$pslog" "$out.w0" "$out.w1"
	[ $r0 -eq 0 ] && [ $r1 -eq 0 ] && [ $rp -eq 0 ] || fail "exit statuses: worker 0 $r0, worker 1 $r1, ps $rp"
}

if [ "$case" != cli ] && [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
	echo "SKIPPED: no MNIST in $data (run scripts/fetch-data.sh)"; exit 77
fi
# rdma: launch binds its tasks to $RDMAPS_RDMA_ADDR (else 127.0.0.1);
# `rdmaps devices` says whether an active RDMA port serves that address,
# with the check --transport=auto makes (exit 0 yes, 1 no)
if [ "$tr" = rdma ]; then
	a=${RDMAPS_RDMA_ADDR:-127.0.0.1}
	"$bin" devices "$a" >"$out" 2>&1; rc=$?
	sed 's/^/  /' "$out"
	[ $rc -eq 1 ] && { echo "SKIPPED: no RDMA device serves $a"; rm -f "$out"; exit 77; }
	[ $rc -eq 0 ] || fail "'rdmaps devices $a' exited $rc"
fi

# every worker's final validation cross entropy must be <= $1; and no
# worker may report a lost end-of-training answer (before the ps waited for
# its workers to hang up, 2 of 40 local sync runs printed "could not confirm")
check_ce() {
	! grep -q "already took .* rejoining the job it holds" "$out" || fail "a worker of a new job said it rejoins one"
	! grep -q "could not confirm the end of training" "$out" || fail "a worker could not confirm the end of training"
	! grep -q "did not hang up" "$out" || fail "the ps waited for a finished worker to hang up"
	n=$(grep -c "validation cross entropy = " "$out")
	[ "$n" -eq "$2" ] || fail "expected $2 workers to report validation cross entropy, got $n"
	grep "validation cross entropy = " "$out" | awk -v max="$1" '{ v = $NF; print "  " $0; if (v + 0 > max + 0 || v != v + 0) bad = 1 } END { exit bad }' \
		|| fail "validation cross entropy above $1"
	# where a run's time went (the rdma tier's DETAIL lines: under TCG a
	# test's wall time is training, the final evaluation and start-up)
	grep "Training elapsed time" "$out" | sed 's/^/  /'
}

# check_barrier U R: the ps's sync barrier line (src/ps/shard.c) counts U
# updates of R gradients, with p50 <= p99 <= max for both durations; printed
# as a DETAIL line (what the ps measured)
check_barrier() {
	grep "sync barrier over" "$out" | awk -v U="$1" -v R="$2" '
		{ n++; print "  " $0
		  if ($0 !~ ("sync barrier over " U " update\\(s\\): the last of R = " R " gradients came ")) bad = 1
		  k = 0; for (i = 1; i <= NF; i++) { t = $i; gsub(/[(),;]/, "", t); if (t ~ /^[0-9]+$/ && $(i + 1) ~ /^us/) v[++k] = t + 0; else if (($(i - 1) == "p99" || $(i - 1) == "max") && t ~ /^[0-9]+$/) v[++k] = t + 0 }
		  # v: spread p50, p99, max, then settle p50, p99, max
		  if (k != 6 || v[1] > v[2] || v[2] > v[3] || v[4] > v[5] || v[5] > v[6]) { print "  bad numbers (" k "): " $0; bad = 1 } }
		END { exit bad || n != 1 }' || fail "ps: expected one sync barrier line for $1 updates of $2 gradients, p50 <= p99 <= max"
}

# check_accounting R: every ps's last line adds up: the gradients it
# accepted are R per update plus those it says training's end left
# unapplied (a partial last aggregation; before 2026-12-06 they were
# counted as accepted and not mentioned)
check_accounting() {
	grep "done after .* gradients accepted" "$out" | awk -v R="$1" '
		{ u = 0; for (i = 1; i <= NF; i++) { if ($i == "updates,") up = $(i - 1); if ($i == "gradients" && $(i + 1) == "accepted,") acc = $(i - 1); if ($i == "accepted" && $(i + 1) == "gradient(s)") u = $(i - 1) }
		  n++; if (acc - u != R * up) { print "  bad: " $0; bad = 1 } }
		END { exit bad || n == 0 }' || fail "a ps's accepted gradients are not $1 per update plus those left unapplied"
}

# same_results FLAG: FLAG changes how the ps serves, never what: sync with
# R = W and a fixed seed gives the same validation cross entropy with and
# without it, and an async run with it trains and counts its steps like
# any other.
same_results() {
	flag=$1
	o0=${TMPDIR:-/tmp}/rdmaps-e2e-$$-noflag.log
	timeout 600 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --transport="$tr" \
		--data_dir="$data" --train_steps=100 --log_every=50 --timeout=60 >"$o0" 2>&1 \
		|| { cat "$o0" >"$out"; rm -f "$o0"; fail "launch without $flag exited non-zero"; }
	timeout 600 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --transport="$tr" "$flag" \
		--data_dir="$data" --train_steps=100 --log_every=50 --timeout=60 >"$out" 2>&1 \
		|| { rm -f "$o0"; fail "launch with $flag exited non-zero"; }
	check_ce 2000 2
	a=$(grep "validation cross entropy = " "$o0" | sort); b=$(grep "validation cross entropy = " "$out" | sort)
	rm -f "$o0"
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "sync results differ with $flag: '$a' against '$b'"
	grep -q "global step 100, 100 updates, 200 gradients accepted, 0 dropped" "$out" \
		|| fail "ps summary with $flag: expected 100 updates from 200 gradients"
	echo "  sync, 100 steps: the same validation cross entropy with and without $flag"
	timeout 600 "$bin" launch --ps=1 --workers=2 --transport="$tr" "$flag" \
		--data_dir="$data" --train_steps=200 --log_every=50 --timeout=60 >"$out" 2>&1 \
		|| fail "async launch with $flag exited non-zero"
	check_ce 5000 2
	grep -q "global step 20[0-9], " "$out" || fail "async ps summary with $flag: expected ~200 global steps"
}

# both_counts: the steps of each worker's --metrics file ($m0, $m1) whose
# "t" lies where both trained (the later first "t" to the earlier last
# one): n0, n1 and their sum nb (0 when a file is missing or empty)
both_counts() {
	n0=0 n1=0 nb=0
	[ -s "$m0" ] && [ -s "$m1" ] || return 0
	set -- $(awk '{ t = $0; sub(/.*"t":/, "", t); t += 0
		if (FNR == 1) { f++; if (f == 1 || t > lo) lo = t }
		last[f] = t; tt[NR] = t; ff[NR] = f }
		END { hi = last[1] < last[2] ? last[1] : last[2]
		      for (i = 1; i <= NR; i++) if (tt[i] >= lo && tt[i] <= hi) c[ff[i]]++
		      print c[1] + 0, c[2] + 0 }' "$m0" "$m1")
	n0=$1 n1=$2 nb=$(($1 + $2))
}

case $case in
sync)
	timeout 600 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --transport="$tr" \
		--data_dir="$data" --train_steps=200 --log_every=50 --timeout=60 >"$out" 2>&1 \
		|| fail "launch exited non-zero"
	check_ce 900 2
	grep -q "global step 200, 200 updates, 400 gradients accepted, 0 dropped" "$out" \
		|| fail "ps summary: expected 200 updates from 400 gradients"
	check_barrier 200 2
	;;
async)
	# The issue's target is 1000 (not met: docs/protocol.md Q5). This asserts
	# learning (initial ~11500) and the step count, not the target.  Async CE
	# has a long tail: 60 runs on 2 busy cores (2026-12-03), 120 worker values:
	# min 870, p50 1091, p95 1653, max 3372, 4 above 2000 (the old bound, which
	# failed a CI run at 2864); TF async simulated with exactly 1 step of
	# staleness (bench/step/async_sim.py, seeds 1-60) already reaches 1969.
	# Hence 5000, under half the initial value.
	m=${TMPDIR:-/tmp}/rdmaps-e2e-$$-metrics.jsonl
	m0=${TMPDIR:-/tmp}/rdmaps-e2e-$$-metrics.worker0.jsonl; m1=${TMPDIR:-/tmp}/rdmaps-e2e-$$-metrics.worker1.jsonl
	timeout 600 "$bin" launch --ps=1 --workers=2 --transport="$tr" \
		--data_dir="$data" --train_steps=200 --log_every=50 --timeout=60 --metrics="$m" >"$out" 2>&1 \
		|| { rm -f "$m0" "$m1"; fail "launch exited non-zero"; }
	check_ce 5000 2
	grep -q "global step 20[0-9], " "$out" || { rm -f "$m0" "$m1"; fail "ps summary: expected ~200 global steps"; }
	# Both workers train, each on its own: each worker's --metrics file
	# (launch writes one per worker) has a line per step it took.  Equal
	# workers share the steps about evenly (902-1099 of 2001 in 7 tcp runs
	# here); a worker held back by the other (a lock, a ps serving one
	# connection) would not.  A 200-step job over tcp on the host (~0.2 s)
	# can be over before the second worker has loaded its data
	# (docs/protocol.md Q5), so when the 200-step run is that lopsided, a
	# 2000-step run is counted instead; in the SoftRoCE VM a step takes far
	# longer than the start-up skew, and the 200-step run is.
	# The steps are counted while both trained (from the later first step's
	# "t" to the earlier last one's), so that a late start on a loaded
	# machine is not taken for a held-back worker (until stop 33 the whole
	# files were counted: a start-up skew of ~1.2 s could fail the
	# 2000-step run too; a review, by reading).  At least 40 steps in that
	# window, each worker at least 20% of them.
	total=200
	both_counts
	if [ "$nb" -lt 40 ] || [ "$n0" -lt $((nb / 5)) ] || [ "$n1" -lt $((nb / 5)) ]; then
		echo "  async, 200 steps: while both trained, worker 0 took $n0, worker 1 took $n1; counting a 2000-step run"
		total=2000
		rm -f "$m0" "$m1"
		timeout 600 "$bin" launch --ps=1 --workers=2 --transport="$tr" --data_dir="$data" --train_steps=2000 \
			--log_every=1000 --timeout=60 --metrics="$m" >"$out" 2>&1 || { rm -f "$m0" "$m1"; fail "launch (2000 steps) exited non-zero"; }
		both_counts
	fi
	echo "  async, $total steps: worker 0 took $(wc -l <"$m0") and worker 1 $(wc -l <"$m1"); while both trained, $n0 and $n1"
	rm -f "$m0" "$m1" "$m"
	[ "$nb" -ge 40 ] || fail "the two workers trained at the same time for only $nb of $total async steps"
	[ "$n0" -ge $((nb / 5)) ] && [ "$n1" -ge $((nb / 5)) ] || fail "one worker took under 20% of the $nb async steps while both trained ($n0 / $n1)"
	;;
backup)
	timeout 600 "$bin" launch --ps=2 --workers=3 --sync_replicas --replicas_to_aggregate=2 \
		--transport="$tr" --data_dir="$data" --train_steps=100 --log_every=50 --timeout=60 >"$out" 2>&1 \
		|| fail "launch exited non-zero"
	check_ce 1500 3
	[ "$(grep -c 'dropped (stale)' "$out")" -eq 2 ] || fail "both ps shards must report their dropped count"
	grep 'dropped (stale)' "$out"
	check_accounting 2
	;;
equiv)
	# (d) the sync path equals one process averaging the same W gradients
	# (W = $6, default 2; R = W; tolerance $7, default sync_equiv's 1e-5)
	eq=$5; nw=${6:-2}; d1=${TMPDIR:-/tmp}/rdmaps-e2e-$$-w0.bin
	timeout 300 "$bin" launch --ps=1 --workers="$nw" --sync_replicas --transport="$tr" \
		--data_dir="$data" --train_steps=20 --seed=7 --log_every=10 --timeout=60 \
		--dump_params="$d1" >"$out" 2>&1 || fail "launch exited non-zero"
	timeout 120 "$eq" "$data" "$d1" 20 7 "$nw" ${7:+"$7"} || { rm -f "$d1"; fail "sync result differs from the single-process reference"; }
	rm -f "$d1"
	;;
small_ops)
	# A piece longer than one op may be (RT_MAX_OP_LEN, 1 GiB) is split
	# into several READs / WRITEs.  RDMAPS_MAX_OP_BYTES=4004 (1001 floats,
	# so pieces end mid-tensor) makes the split happen with mlp: 2 ps and 2
	# workers train to the same bytes as with whole pieces ($5 steps,
	# default 30).
	st=${5:-30}
	d0=${TMPDIR:-/tmp}/rdmaps-e2e-$$-whole.bin; d1=${TMPDIR:-/tmp}/rdmaps-e2e-$$-split.bin
	timeout 300 "$bin" launch --ps=2 --workers=2 --sync_replicas --transport="$tr" \
		--data_dir="$data" --train_steps="$st" --seed=11 --log_every=10 --timeout=60 \
		--dump_params="$d0" >"$out" 2>&1 || { rm -f "$d0"; fail "launch (whole pieces) exited non-zero"; }
	RDMAPS_MAX_OP_BYTES=4004 timeout 300 "$bin" launch --ps=2 --workers=2 --sync_replicas --transport="$tr" \
		--data_dir="$data" --train_steps="$st" --seed=11 --log_every=10 --timeout=60 \
		--dump_params="$d1" >"$out" 2>&1 || { rm -f "$d0" "$d1"; fail "launch (split pieces) exited non-zero"; }
	check_ce 11513 2
	n=$(grep -c "RDMAPS_MAX_OP_BYTES: ps [01]'s [0-9]* floats in [0-9]* READs / WRITEs of at most 1001 floats" "$out")
	[ "$n" -eq 4 ] || { rm -f "$d0" "$d1"; fail "expected 4 lines (2 workers x 2 ps) saying how the pieces were split, got $n"; }
	grep "RDMAPS_MAX_OP_BYTES" "$out" | sed 's/^/  /'
	cmp -s "$d0" "$d1" || { rm -f "$d0" "$d1"; fail "the parameters differ between whole and split pieces"; }
	rm -f "$d1"
	echo "  $st sync steps, 2 ps: identical parameters with pieces split into ops of 1001 floats"
	if [ "$tr" = tcp ]; then
		# More ops per phase than a TCP connection holds at once (255
		# unanswered): ops of 100 floats make about 400 per phase on each of
		# the 2 ps.  A post waits for room, and the job trains to the same
		# bytes as with whole pieces.  Until stop 33 tcp refused the
		# 256th op at once, and the job stopped or not depending on how
		# fast the ps answered (a CI run: worker 1 stopped, the test
		# expected the chief to).  Over verbs (a send queue of 128) the
		# transport suite's 2000 unsignaled READs check the same wait; the
		# rdma tier's time is kept for the rest (this run took 25-35 s
		# there).
		mf=100 least=256
		RDMAPS_MAX_OP_BYTES=$((mf * 4)) timeout 300 "$bin" launch --ps=2 --workers=2 --sync_replicas --transport="$tr" \
			--data_dir="$data" --train_steps="$st" --seed=11 --log_every=10 --timeout=60 \
			--dump_params="$d1" >"$out" 2>&1 || { rm -f "$d0" "$d1"; fail "launch (ops of $mf floats) exited non-zero"; }
		n=$(sed -n "s/.*RDMAPS_MAX_OP_BYTES: ps [01]'s [0-9]* floats in \([0-9]*\) READs \/ WRITEs of at most $mf floats/\1/p" "$out" \
			| awk -v l="$least" '$1 >= l' | wc -l)
		[ "$n" -eq 4 ] || { rm -f "$d0" "$d1"; fail "expected 4 lines (2 workers x 2 ps) saying each ps's pieces took at least $least ops of $mf floats, got $n"; }
		cmp -s "$d0" "$d1" || { rm -f "$d0" "$d1"; fail "the parameters differ between whole pieces and ops of $mf floats"; }
		echo "  $st sync steps, 2 ps: identical parameters with pieces $(grep -m1 -o "in [0-9]* READs / WRITEs of at most $mf floats" "$out") (more than a connection holds at once)"
	fi
	rm -f "$d0" "$d1"
	;;
ps_spin)
	# --ps_spin_us changes when the ps's progress thread looks for READs,
	# never what it serves
	same_results --ps_spin_us=300
	;;
ps_progress)
	# --ps_progress changes which thread of the ps serves the workers'
	# operations (caller, the default: the ps's own thread while it waits;
	# thread: a progress thread), never what it serves
	same_results --ps_progress=thread
	;;
worker_progress)
	# --worker_progress changes which thread of a worker serves the ps's
	# writes into it (caller, the default: the thread that waits for the
	# release; thread: a progress thread), never what it serves
	same_results --worker_progress=thread
	;;
slow_compute)
	# A worker that computes longer than the ps's liveness check (3 s:
	# worker 1 sleeps 4 s in each step's compute phase) is still answered
	# for: with --worker_progress=caller nobody waits on its context then,
	# and the transport's watchdog serves the ps's liveness WRITEs.  Without
	# the watchdog the ps drops worker 1 every step (checked).
	timeout 300 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --transport="$tr" \
		--data_dir="$data" --train_steps=3 --straggler_task=1 --straggler_delay_ms=4000 \
		--timeout=60 >"$out" 2>&1 || fail "launch exited non-zero"
	! grep -q "liveness\|lost worker\|lost ps" "$out" || fail "a connection was dropped while worker 1 computed"
	grep -q "global step 3, 3 updates, 6 gradients accepted, 0 dropped" "$out" \
		|| fail "ps summary: expected 3 updates from 6 gradients"
	check_ce 11513 2
	echo "  worker 1 computed 4 s per step (3 steps): no liveness drop"
	;;
lstm)
	# The LSTM's initial prediction is near uniform: validation cross entropy
	# about 5000 * ln(10) = 11513.  "Learns" = it falls by at least half.
	# Batch and learning rate: $5 and $6, default 100 and 0.001 (the host's
	# run: 2798 here).  The rdma tier's run takes batch 16 at 0.005, since
	# under TCG a batch-100 step computes for seconds (batch 16: 1.2 s);
	# that setting gave 3269-5152 over seeds 1-6 over tcp on the host, and
	# 4542 with the default seed (1).  Sync R = W with a fixed seed gives
	# the same result on every run.
	timeout 900 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --model=lstm \
		--batch_size="${5:-100}" --learning_rate="${6:-0.001}" \
		--transport="$tr" --data_dir="$data" --train_steps=100 --log_every=50 --timeout=120 >"$out" 2>&1 \
		|| fail "launch exited non-zero"
	check_ce 5756 2
	;;
over_aggregate)
	# R > W (replicas_to_aggregate 5, 2 workers): a worker is released at
	# each push, so the workers compute several batches per update, as TF's
	# tokens let them.  Each update takes exactly R accepted gradients (2 ps:
	# both shards say so; each shard drops stale gradients on its own, so the
	# two may end one version apart, docs/protocol.md).  The ps's pending list once grew by one per
	# accepted gradient here and ran past its W + 1 entries (a heap
	# overflow: the asan tier runs this test).
	timeout 600 "$bin" launch --ps=2 --workers=2 --sync_replicas --replicas_to_aggregate=5 \
		--transport="$tr" --data_dir="$data" --train_steps=20 --log_every=10 --timeout=60 >"$out" 2>&1 \
		|| fail "launch exited non-zero"
	check_ce 5000 2
	# 100 accepted gradients made the 20 updates; up to W more may be
	# accepted after the last one, into an aggregation that training's end
	# leaves unapplied (each shard counts its own: they can differ), and
	# the ps says how many
	[ "$(grep -c 'global step 20, 20 updates, 10[0-2] gradients accepted' "$out")" -eq 2 ] \
		|| fail "both ps shards must report 20 updates of 5 accepted gradients each (+ at most 2 left over)"
	grep 'dropped (stale)' "$out"
	check_accounting 5
	;;
cli)
	# the line rdmaps prints when it replaces OpenBLAS's fallback kernels
	# (kernels/blas_core.h)
	blas_notice='OpenBLAS does not know this CPU'
	expect2() {
		"$bin" "$@" >"$out" 2>&1; rc=$?
		[ $rc -eq 2 ] || fail "'rdmaps $*' exited $rc, expected 2"
		# the kernel-set notice is not the message
		grep -v "$blas_notice" "$out" | grep -Eq "rdmaps( launch| train)?:" \
			|| fail "'rdmaps $*' printed no message"
	}
	expect2 --bogus_flag=1
	expect2 --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2
	expect2 --job_name=worker --ps_hosts=a:1 --worker_hosts=b:2
	expect2 --job_name=worker --task_index=3 --ps_hosts=a:1 --worker_hosts=b:2
	expect2 --job_name=chief --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2
	expect2 --job_name=ps --task_index=0 --ps_hosts=a --worker_hosts=b:2
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1,,b:2 --worker_hosts=b:2
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:99999 --worker_hosts=b:2
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --sync_replicas=maybe
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --train_steps=-5
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --model=resnet
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --transport=ib
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --save_model_secs=soon
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --barrier_timeout=0
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --recovery_timeout=-3
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --tcp_spin_us=-1
	# the launcher's own reader pauses for 8 s (a pager, Ctrl-S) while the
	# job runs at --timeout=3: the job completes (the launcher blocked on
	# its stdout, stopped reading its tasks' pipes, and the ps gave up: exit
	# 1), every line kept; and `| head -2`: the job completes too
	if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
		{ "$bin" launch --ps=1 --workers=2 --sync_replicas --transport=tcp --data_dir="$data" --train_steps=3000 \
			--timeout=3; echo "launch exited $?"; } 2>&1 | { sleep 8; cat; } >"$out"
		grep -q "^launch exited 0" "$out" && grep -q "global step 3000, " "$out" \
			|| fail "a job whose launcher's stdout was not read for 8 s (--timeout=3) did not complete"
		n=$(grep -c "training step .* done" "$out")
		[ "$n" -eq 6000 ] || fail "a paused reader lost lines: $n of 6000 step lines"
		echo "  the launcher's reader paused 8 s (--timeout=3): the job completed, $n step lines kept"
		{ "$bin" launch --ps=1 --workers=2 --sync_replicas --transport=tcp --data_dir="$data" --train_steps=1000 \
			--timeout=10; echo "launch exited $?" >"$out.rc"; } 2>&1 | head -2 >/dev/null
		grep -q "^launch exited 0" "$out.rc" || { cat "$out.rc" >"$out"; rm -f "$out.rc"; fail "launch | head -2: $(cat "$out")"; }
		rm -f "$out.rc"
	fi
	# a ps host name that does not resolve (a typo) is named as such, not
	# as an unreachable address, and the worker gives up after --timeout
	if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
		"$bin" --job_name=worker --task_index=0 --ps_hosts=no-such-host.invalid:2222 --worker_hosts=localhost:1 \
			--transport=tcp --data_dir="$data" --timeout=1 >"$out" 2>&1; rc=$?
		[ $rc -eq 1 ] && grep -q "cannot connect to ps 0 at no-such-host.invalid:2222: host name does not resolve" "$out" \
			|| fail "a worker with an unresolvable ps host exited $rc without naming the cause"
	fi
	# under Slurm without --slurm_num_ps: exit 2 and say which flag is missing
	SLURM_PROCID=0 "$bin" --train_steps=1 >"$out" 2>&1; rc=$?
	[ $rc -eq 2 ] || fail "Slurm without --slurm_num_ps exited $rc, expected 2"
	grep -q -- "--slurm_num_ps" "$out" || fail "Slurm without --slurm_num_ps: no hint at the flag"
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --tcp_spin_us=fast
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --ps_spin_us=-1
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --ps_spin_us=soon
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --ps_progress=fast
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --worker_progress=fast
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --logdir=
	expect2 ports 0
	expect2 ports many
	expect2 ports 2 not-an-address
	expect2 devices 127.0.0.1 extra
	expect2 devices nosuch.invalid
	# `rdmaps devices`: 0 when an RDMA port serves the address, 1 when none
	# does (this host either way), and its last line says what auto picks
	"$bin" devices 127.0.0.1 >"$out" 2>&1; rc=$?
	[ $rc -le 1 ] || fail "'rdmaps devices 127.0.0.1' exited $rc, expected 0 or 1"
	tail -1 "$out" | grep -qE "^--transport=auto on 127\.0\.0\.1: (rdma|tcp)" \
		|| fail "'rdmaps devices 127.0.0.1' did not say what --transport=auto picks"
	[ $rc -eq 0 ] || tail -1 "$out" | grep -q ": tcp (" || fail "'rdmaps devices' exited 1 but did not say tcp"
	got=$("$bin" ports 5) || fail "'rdmaps ports 5' exited non-zero"
	echo "$got" | grep -qE '^[0-9]+( [0-9]+){4}$' || fail "'rdmaps ports 5' printed '$got', expected 5 ports"
	[ "$(echo "$got" | tr ' ' '\n' | sort -u | wc -l)" -eq 5 ] || fail "'rdmaps ports 5' repeated a port: $got"
	TF_CONFIG='{"cluster":{"ps":["a:1"]},"task":{"type":"worker","index":0}}' "$bin" >"$out" 2>&1
	[ $? -eq 2 ] || fail "TF_CONFIG without workers must exit 2"
	expect2 --download_only=maybe
	expect2 --existing_servers=perhaps --download_only --data_dir="$data"
	# (found by a review, 2026-12-05) a float flag must stay finite and
	# positive as a float; a path too long is refused, not cut; a repeated
	# host list frees the first (the asan tier counts a leak as a failure);
	# launch sets the four cluster flags itself
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --learning_rate=inf
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --learning_rate=1e39
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --learning_rate=1e-50
	long=$(printf '%0600d' 0)
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --metrics="/tmp/$long"
	expect2 --job_name=ps --task_index=0 --ps_hosts=a:1 --ps_hosts=a:2 --worker_hosts=b:2 --sync_replicas=maybe
	expect2 launch --ps=1 --workers=2 --task_index=0
	# --worker_nice: 0..19, and launch's own (a task takes no niceness flag)
	expect2 launch --ps=1 --workers=2 --worker_nice=20 --data_dir="$data"
	expect2 launch --ps=1 --workers=2 --worker_nice=-1 --data_dir="$data"
	expect2 --job_name=worker --task_index=0 --ps_hosts=a:1 --worker_hosts=b:2 --worker_nice=5
	# a prefix of a flag's name is not that flag (absl's rule): launch
	# passed --metr=F to every worker unchanged, one file for all of them
	expect2 launch --ps=1 --workers=2 --metr=/tmp/x --data_dir="$data"
	expect2 --job_name=worker --task_ind=0 --ps_hosts=a:1 --worker_hosts=b:2
	expect2 --nosync --download_only --data_dir="$data"
	grep -q "did you mean --nosync_replicas" "$out" || fail "a flag prefix: no hint of the whole flag"
	# the distributed lstm has 128 units: another --hidden_units was ignored
	expect2 --model=lstm --hidden_units=64 --download_only --data_dir="$data"
	"$bin" -job_name ps -task_index 0 -ps_hosts a:1 -worker_hosts b:2 --nosync_replicas \
		--download_only --data_dir "$data" >"$out" 2>&1 || fail "whole flags, values in the next word: refused"
	# the auth token: longer than 40 bytes, with a NUL, a directory
	tok=${TMPDIR:-/tmp}/rdmaps-e2e-$$-token
	printf '%041d' 7 >"$tok"
	expect2 --auth_token_file="$tok" --download_only --data_dir="$data"
	printf 'ab\000cd' >"$tok"
	expect2 --auth_token_file="$tok" --download_only --data_dir="$data"
	rm -f "$tok"
	expect2 --auth_token_file="${TMPDIR:-/tmp}" --download_only --data_dir="$data"
	# TF_CONFIG: junk after the object; and half a cluster from flags
	TF_CONFIG='{"cluster":{"ps":["a:1"],"worker":["b:2"]},"task":{"type":"worker","index":0}} junk' "$bin" >"$out" 2>&1
	[ $? -eq 2 ] || fail "TF_CONFIG with junk after the JSON must exit 2"
	TF_CONFIG='{"cluster":{"ps":["a:1"],"worker":["b:2","c:3"]},"task":{"type":"worker","index":1}}' \
		"$bin" --task_index=0 >"$out" 2>&1
	[ $? -eq 2 ] && grep -q "task_index conflicts with the cluster from TF_CONFIG" "$out" \
		|| fail "--task_index under TF_CONFIG must exit 2 naming the conflict"
	# --job_name and --task_index without host lists: mnist_replica's
	# default hosts, not TF_CONFIG's, were used without a word
	TF_CONFIG='{"cluster":{"ps":["a:1"],"worker":["b:2","c:3"]},"task":{"type":"worker","index":1}}' \
		"$bin" --job_name=worker --task_index=1 >"$out" 2>&1
	[ $? -eq 2 ] && grep -q "job_name conflicts with the cluster from TF_CONFIG" "$out" \
		|| fail "--job_name without host lists under TF_CONFIG must exit 2 naming the conflict"
	# rdmaps train: a batch larger than the training set; --model in
	# getopt's other spellings (it used to be missed: an mlp trained)
	expect2 train --data_dir="$data" --batch_size=60000 --epochs=1
	"$bin" train --mod=lstm --data_dir="$data" --epochs=0 >"$out" 2>&1 && grep -q "^model lstm" "$out" \
		|| fail "'rdmaps train --mod=lstm' did not build the lstm"
	echo "  39 argument errors (flags, token files, ports, devices, launch, train), 5 distinct ports from rdmaps ports, Slurm without --slurm_num_ps and three bad TF_CONFIGs each exited 2 with a message"
	# mnist_replica's default host lists: one ps, two workers
	"$bin" --job_name=worker --task_index=2 >"$out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q "the worker job has 2 task(s)" "$out" \
		|| fail "the default --worker_hosts (localhost:2223,localhost:2224) is not in effect"
	"$bin" --job_name=ps --task_index=1 >"$out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q "the ps job has 1 task(s)" "$out" \
		|| fail "the default --ps_hosts (localhost:2222) is not in effect"
	# --download_only (mnist_replica's; the dist_mnist_test harness runs it
	# first): no cluster flags needed; 0 when --data_dir holds the data, 1
	# with the fetch hint when it does not; --existing_servers is accepted
	"$bin" --download_only --existing_servers=True --data_dir="$data" >"$out" 2>&1; rc=$?
	[ $rc -eq 0 ] || fail "'rdmaps --download_only --data_dir=$data' exited $rc, expected 0"
	grep -q "holds a complete MNIST-format data set: 55000 training, 5000 validation, 10000 test images" "$out" \
		|| fail "'rdmaps --download_only' did not report the data set"
	"$bin" --download_only=True --data_dir="$data/no-such-dir" >"$out" 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "'rdmaps --download_only' on a missing directory exited $rc, expected 1"
	grep -q "fetch-data.sh" "$out" || fail "'rdmaps --download_only' on a missing directory gave no fetch hint"
	echo "  --download_only: 0 with the data, 1 and the fetch hint without it"
	# images of another size than 28x28 (a valid IDX file otherwise): the
	# worker, train and --download_only refuse them (they used to overrun
	# the batch buffers: free(): invalid pointer)
	bad=${TMPDIR:-/tmp}/rdmaps-e2e-$$-40x40
	mkdir -p "$bad"
	{ printf '\000\000\010\003\000\000\023\211\000\000\000\050\000\000\000\050'; head -c $((5001 * 1600)) /dev/zero; } >"$bad/train-images-idx3-ubyte"
	{ printf '\000\000\010\001\000\000\023\211'; head -c 5001 /dev/zero; } >"$bad/train-labels-idx1-ubyte"
	{ printf '\000\000\010\003\000\000\000\001\000\000\000\050\000\000\000\050'; head -c 1600 /dev/zero; } >"$bad/t10k-images-idx3-ubyte"
	{ printf '\000\000\010\001\000\000\000\001'; head -c 1 /dev/zero; } >"$bad/t10k-labels-idx1-ubyte"
	"$bin" train --data_dir="$bad" --epochs=1 >"$out" 2>&1; rc=$?
	[ $rc -eq 1 ] && grep -q "images are 40x40, the models take 28x28" "$out" \
		|| { rm -rf "$bad"; fail "'rdmaps train' on 40x40 images exited $rc without saying why"; }
	"$bin" --download_only --data_dir="$bad" >"$out" 2>&1; rc=$?
	[ $rc -eq 1 ] && grep -q "images are 40x40" "$out" \
		|| { rm -rf "$bad"; fail "'rdmaps --download_only' on 40x40 images exited $rc without saying why"; }
	timeout 60 "$bin" launch --ps=1 --workers=1 --transport=tcp --data_dir="$bad" --train_steps=2 --timeout=20 >"$out" 2>&1; rc=$?
	rm -rf "$bad"
	[ $rc -eq 1 ] && grep -q "Worker 0: .*images are 40x40, the models take 28x28" "$out" \
		|| fail "a worker on 40x40 images: launch exited $rc without the worker saying why"
	echo "  40x40 images: train, --download_only and a worker refuse them, exit 1"
	# write errors at the end (a full disk): the worker says so and exits 1
	# (both were ignored: exit 0 and an empty file)
	for f in metrics dump_params; do
		timeout 60 "$bin" launch --ps=1 --workers=1 --transport=tcp --data_dir="$data" --train_steps=2 \
			--"$f"=/dev/full >"$out" 2>&1 && fail "--$f=/dev/full: launch exited 0"
		grep -q "Worker 0: cannot write --$f=/dev/full: No space left on device" "$out" \
			|| fail "--$f=/dev/full: the worker did not say it could not write"
	done
	echo "  --metrics and --dump_params on a full device: the worker says so, exit 1"
	# no ps listening: the worker retries until --timeout, says so once after
	# 1 s (not once per attempt: about 6 attempts in 3 s), then gives up
	# with exit 1
	timeout 60 "$bin" --job_name=worker --task_index=1 --ps_hosts=127.0.0.1:1 \
		--worker_hosts=127.0.0.1:2,127.0.0.1:3 --transport=tcp --data_dir="$data" --timeout=3 >"$out" 2>&1
	rc=$?
	[ $rc -eq 1 ] || { cat "$out"; fail "a worker without a ps exited $rc, expected 1"; }
	grep -q "Worker 1: cannot connect to ps 0 at 127.0.0.1:1: connection refused (gave up after --timeout)" "$out" \
		|| { cat "$out"; fail "a worker without a ps did not say why it gave up"; }
	n=$(grep -c "ps 0 at 127.0.0.1:1\|127.0.0.1:1 failed" "$out")
	[ "$n" -le 2 ] || { cat "$out"; fail "a worker without a ps printed $n lines about it in 3 s (one per attempt?)"; }
	echo "  a worker without a ps: $n lines in 3 s, then exit 1"
	# a worker started with other flags than its ps is refused with the
	# reason and stops at once (it used to retry until --timeout: 120 s)
	pslog=${TMPDIR:-/tmp}/rdmaps-e2e-$$-ps.log
	# (TF's spellings on the way: one dash, and a --noNAME boolean after
	# --NAME=True: this ps is async, as the worker below)
	ps_listening 0 1 0 -job_name=ps --worker_hosts=127.0.0.1:1 --sync_replicas=True --nosync_replicas \
		--transport=tcp --timeout=30
	pport=$p0
	timeout 20 "$bin" --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$pport --worker_hosts=127.0.0.1:1 \
		--transport=tcp --data_dir="$data" --hidden_units=50 --timeout=60 >"$out" 2>&1
	rc=$?
	# another --learning_rate: the ps runs the optimizer, so it must match
	# (it used to train silently at the ps's rate)
	lrout=${TMPDIR:-/tmp}/rdmaps-e2e-$$-lr.log
	timeout 20 "$bin" --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$pport --worker_hosts=127.0.0.1:1 \
		--transport=tcp --data_dir="$data" --learning_rate=0.001 --timeout=60 >"$lrout" 2>&1
	lrc=$?
	kill $pp 2>/dev/null; wait $pp
	grep -q "the peer runs another job configuration (.*--learning_rate)" "$lrout"; lrmsg=$?
	rm -f "$lrout"
	[ $lrc -eq 1 ] && [ $lrmsg -eq 0 ] || fail "a worker with another --learning_rate than its ps exited $lrc without the reason"
	grep -q "refused a connection (role 1, index 0, model/placement/flags mismatch)" "$pslog" \
		|| { cat "$pslog"; rm -f "$pslog"; fail "the ps did not say why it refused the worker"; }
	grep -q "floats, async, 1 worker" "$pslog" \
		|| { cat "$pslog"; rm -f "$pslog"; fail "-job_name=ps --sync_replicas=True --nosync_replicas: not an async ps"; }
	rm -f "$pslog"
	[ $rc -eq 1 ] || fail "a worker with other flags than its ps exited $rc, expected 1 (124: still retrying)"
	grep -q "cannot connect to ps 0 at 127.0.0.1:$pport: the peer runs another job configuration" "$out" \
		|| fail "a worker with other flags than its ps was not told why"
	echo "  a worker with other flags than its ps (--hidden_units, --learning_rate): refused with the reason, exit 1 at once"
	# a worker whose --ps_hosts lists the two ps in the other order reaches
	# ps 1 as its "ps 0": refused with the reason (it used to train on the
	# other shard's bytes and exit 0 with another result than its peers)
	ps_listening 17 2 1 --job_name=ps --worker_hosts=127.0.0.1:1 --transport=tcp --timeout=30
	p1=$((p0 + 1))
	timeout 20 "$bin" --job_name=worker --task_index=0 --ps_hosts=127.0.0.1:$p1,127.0.0.1:$p0 --worker_hosts=127.0.0.1:1 \
		--transport=tcp --data_dir="$data" --timeout=60 >"$out" 2>&1
	rc=$?
	kill $pp 2>/dev/null; wait $pp
	grep -q "ps 1: refused worker 0: its --ps_hosts names this ps (127.0.0.1:$p1) as ps 0" "$pslog" \
		|| { cat "$pslog"; rm -f "$pslog"; fail "ps 1 did not say that the worker's --ps_hosts are in another order"; }
	rm -f "$pslog"
	[ $rc -eq 1 ] || fail "a worker with the --ps_hosts in another order exited $rc, expected 1"
	grep -q "cannot connect to ps 0 at 127.0.0.1:$p1: the peer runs another job configuration (.*the order of --ps_hosts" "$out" \
		|| fail "a worker with the --ps_hosts in another order was not told why"
	echo "  a worker with the --ps_hosts in another order: refused with the reason, exit 1 at once"
	# OpenBLAS's own kernel set on this CPU (ports does not compute: it
	# never runs again, so it shows OpenBLAS's choice), and whether rdmaps
	# replaces it (kernels/blas_core.h): only its fallback Prescott, on a
	# CPU with AVX; the launch below and --version check both cases
	own=$(env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 "$bin" ports 1 2>&1 >/dev/null | sed -n 's/^Core: //p' | head -1)
	[ -n "$own" ] || fail "OpenBLAS did not name its kernel set (OPENBLAS_VERBOSE=2 rdmaps ports 1)"
	if [ "$own" = Prescott ] && grep -qw avx /proc/cpuinfo; then fix=1; else fix=0; fi
	# launch's own flags with their value in the next word: not handed to
	# the tasks (each used to fail on a stray "1")
	env -u OPENBLAS_CORETYPE timeout 120 "$bin" launch --ps 1 --workers 1 --worker_nice 0 --transport=tcp --data_dir="$data" --train_steps=2 \
		--log_every=1 >"$out" 2>&1 || fail "'rdmaps launch --ps 1 --workers 1 --worker_nice 0' failed"
	grep -q "rdmaps launch: all workers finished" "$out" || fail "'rdmaps launch --ps 1 --workers 1 --worker_nice 0' did not finish"
	grep -q "^rdmaps launch: 1 ps ([^)]*), 1 workers ([^)]*), async$" "$out" \
		|| fail "launch --worker_nice 0 still named a niceness for its workers"
	echo "  launch --ps 1 --workers 1 --worker_nice 0 (values in the next word): trains"
	# the tasks inherit the launcher's kernel set: said once for all, or never
	said=$(grep -c "$blas_notice" "$out")
	[ "$said" -eq "$fix" ] || fail "launch (OpenBLAS's own set $own) said $said times that OpenBLAS does not know this CPU, expected $fix"
	# --version names the release and the commit (for bug reports), and
	# OpenBLAS's kernel set: on a CPU that OpenBLAS does not know (its
	# fallback Prescott, on a CPU with AVX) rdmaps runs again with the set
	# the CPU supports and says so once; elsewhere, and whenever
	# OPENBLAS_CORETYPE is given, OpenBLAS's choice stays
	env -u OPENBLAS_CORETYPE "$bin" --version >"$out" 2>&1 || fail "rdmaps --version exited non-zero"
	grep -Eq '^rdmaps [0-9]+[.][0-9]+[.][0-9]+ [(]git ([0-9a-f]{7,}(-dirty)?|unknown), [A-Za-z]+ build[)]$' "$out" \
		|| fail "rdmaps --version did not print 'rdmaps X.Y.Z (git COMMIT, TYPE build)'"
	grep -q '^openblas: ' "$out" || fail "rdmaps --version did not name its BLAS"
	echo "  --version: $(grep -E "^rdmaps [0-9]" "$out" | head -1)"
	ran=$(sed -n 's/^openblas: .*(kernels: \([^,)]*\).*/\1/p' "$out")
	said=$(grep -c "$blas_notice" "$out")
	if [ $fix -eq 1 ]; then
		[ -n "$ran" ] && [ "$ran" != Prescott ] || fail "OpenBLAS took Prescott on a CPU with AVX and rdmaps kept it (ran '$ran')"
		[ "$said" -eq 1 ] || fail "rdmaps said $said times (not once) that OpenBLAS does not know this CPU"
		echo "  OpenBLAS took its fallback Prescott on this CPU: rdmaps ran with $ran and said so once"
	else
		[ "$ran" = "$own" ] || fail "rdmaps ran the $ran kernels where OpenBLAS chose $own"
		[ "$said" -eq 0 ] || fail "rdmaps said that OpenBLAS does not know this CPU, where OpenBLAS chose $own"
		echo "  OpenBLAS chose $own on this CPU: kept"
	fi
	OPENBLAS_CORETYPE=Prescott "$bin" --version >"$out" 2>&1 || fail "rdmaps --version (OPENBLAS_CORETYPE=Prescott) exited non-zero"
	grep -q '(kernels: Prescott, OPENBLAS_CORETYPE=Prescott)$' "$out" && ! grep -q 'does not know this CPU' "$out" \
		|| fail "an OPENBLAS_CORETYPE given was not kept, or not named by --version"
	echo "  OPENBLAS_CORETYPE given: kept"
	# SIGTERM to the launcher (a job scheduler's stop): every task stops,
	# the launcher says so and exits 128 + 15
	mdir=$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-e2e-metrics-XXXXXX")
	bg_launch --train_steps=100000000 --log_every=100000 --metrics="$mdir/m.jsonl"
	# a few hundred steps in, so that a buffered file would have flushed
	# some 4 KiB blocks (and torn a record) by then
	k=0
	while [ "$(cat "$mdir/m.worker0.jsonl" 2>/dev/null | wc -l)" -lt 300 ] && [ $k -lt 50 ]; do sleep 0.1; k=$((k + 1)); done
	hosts=$(sed -n 's/^rdmaps launch: 1 ps (\([^)]*\)).*/\1/p' "$out")
	kill -TERM $lp; wait $lp; rc=$?
	[ $rc -eq 143 ] || fail "launch stopped by SIGTERM exited $rc, expected 143"
	grep -q "^rdmaps launch: interrupted (Terminated); stopping every task" "$out" || fail "launch did not say it was interrupted"
	sleep 1
	[ -n "$hosts" ] && ! pgrep -f "ps_hosts=$hosts" >/dev/null || fail "tasks of a launcher stopped by SIGTERM still run (ps at $hosts)"
	echo "  launch stopped by SIGTERM: exit 143, no task left"
	# ... and its workers' --metrics files hold whole lines, one per step
	# they pushed, none missing (fully buffered, each lost up to 4 KiB of
	# records and ended in a torn line): a step count short of the ps's
	# gradient count by more than one per worker is a loss
	n=0
	for f in "$mdir/m.worker0.jsonl" "$mdir/m.worker1.jsonl"; do
		[ -s "$f" ] || fail "no --metrics file $f after SIGTERM"
		[ -z "$(tail -c 1 "$f")" ] || fail "$f does not end in a newline after SIGTERM (a torn record)"
		k=$(awk '!/^[{]"task":[0-9]+,"local_step":[0-9]+,"global_step":[0-9]+,.*,"t":[0-9.]+[}]$/ || $0 !~ "\"local_step\":" NR "," { bad = 1 } END { print bad ? -1 : NR }' "$f")
		[ "$k" -ge 1 ] || fail "$f: a record that is not a whole JSON line, or a step missing, after SIGTERM"
		n=$((n + k))
	done
	pushed=$(sed -n 's/^\[ps0\] ps 0: done after .* \([0-9]*\) gradients accepted, \([0-9]*\) dropped.*/\1 \2/p' "$out" | awk '{ print $1 + $2 }')
	[ -n "$pushed" ] || fail "the ps stopped by SIGTERM did not print its gradient count"
	[ "$n" -ge $((pushed - 2)) ] || fail "the --metrics files hold $n steps, the ps took $pushed gradients: records lost on SIGTERM"
	rm -rf "$mdir"
	echo "  its workers' --metrics after SIGTERM: $n whole records for the ps's $pushed gradients"
	# a task that does not stop (its ps stopped by SIGSTOP): a second
	# interrupt kills it at once, and the launcher says so (it waited 5 s
	# per task and killed it without a word, whatever the user pressed)
	bg_launch --train_steps=100000000 --log_every=100000
	hosts=$(sed -n 's/^rdmaps launch: 1 ps (\([^)]*\)).*/\1/p' "$out")
	psp=$(pgrep -f "job_name=ps.*ps_hosts=$hosts" | head -1)
	[ -n "$psp" ] || fail "no ps process of the launch found (ps at $hosts)"
	# the workers run 5 nicer than the ps (--worker_nice's default), all
	# their threads (set before exec), and the launch line says so
	wks=$(pgrep -f "job_name=worker.*ps_hosts=$hosts")
	[ "$(echo $wks | wc -w)" -eq 2 ] || { kill -9 $lp; fail "not 2 worker processes of the launch found: '$wks'"; }
	psn=$(awk '{ print $19 }' /proc/$psp/stat)
	for w in $wks; do
		for t in /proc/$w/task/*; do
			d=$(($(awk '{ print $19 }' "$t/stat") - psn))
			[ "$d" -eq 5 ] || { kill -9 $lp; fail "a worker thread ($t) runs at nice +$d from the ps, expected +5"; }
		done
	done
	grep -q "^rdmaps launch: 1 ps ([^)]*), 2 workers ([^)]*) at nice +5, sync$" "$out" \
		|| { kill -9 $lp; fail "the launch line did not name the workers' niceness"; }
	kill -STOP "$psp"
	kill -INT $lp
	sleep 1
	kill -INT $lp
	gone $lp 10 || { kill -9 "$psp" $lp; fail "launch still ran 10 s after a second interrupt"; }
	wait $lp; rc=$?
	kill -CONT "$psp" 2>/dev/null
	[ $rc -eq 130 ] || fail "launch stopped by two SIGINTs exited $rc, expected 130"
	grep -q "^rdmaps launch: ps0 still runs at a second interrupt: killing it (SIGKILL)" "$out" \
		|| fail "launch did not say it killed the stopped ps at the second interrupt"
	! kill -0 "$psp" 2>/dev/null || fail "the stopped ps still runs after the second interrupt"
	echo "  a task that does not stop: killed at the second interrupt, said"
	# the whole job stopped (Ctrl-Z) for longer than --timeout, then
	# continued (fg): it goes on (every task took the stopped time for
	# its peers' silence: the ps gave up at once, exit 1)
	bg_launch setsid --train_steps=3000 --straggler_delay_ms=1 --log_every=100000 --timeout=3
	sleep 0.5 # (3000 steps of >= 1 ms: the stop comes mid-run)
	env kill -STOP -- "-$lp" || fail "could not stop the launcher's session"
	sleep 5
	env kill -CONT -- "-$lp"
	gone $lp 60 || { env kill -KILL -- "-$lp"; fail "a job stopped and continued did not end within 60 s"; }
	wait $lp; rc=$?
	[ $rc -eq 0 ] && grep -q "^rdmaps launch: all workers finished" "$out" \
		|| fail "a job stopped for 5 s (--timeout=3) and continued exited $rc"
	grep -q "global step 3000, " "$out" || fail "a job stopped and continued did not reach global step 3000"
	echo "  the whole job stopped 5 s (--timeout=3), then continued: it completes"
	# SIGHUP to the whole session (a terminal closed, an ssh session
	# dropped): every task gets it; the ps saves its last checkpoint (its
	# default action killed it without one)
	mdir=$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-e2e-logdir-XXXXXX")
	bg_launch setsid --train_steps=100000000 --log_every=100000 --logdir="$mdir" --save_model_secs=100000
	sleep 0.5
	# (dash's kill takes no process group: procps' does)
	env kill -HUP -- "-$lp" || fail "could not send SIGHUP to the launcher's session"
	gone $lp 30 || { env kill -KILL -- "-$lp"; fail "launch still ran 30 s after SIGHUP to its session"; }
	wait $lp
	ls "$mdir"/shard-0-step-*.ckpt >/dev/null 2>&1 || fail "no checkpoint in --logdir after SIGHUP to the session"
	grep -q "ps 0: stopped by \(Hangup\|Terminated\): saving a last checkpoint" "$out" \
		|| fail "the ps did not say that a signal stopped it"
	echo "  SIGHUP to the session: $(grep -o 'ps 0: stopped by [A-Za-z]*' "$out"), $(ls "$mdir" | head -1) saved"
	rm -rf "$mdir"
	;;
ipv6)
	# the cluster spelled in IPv6 ([::1]:port, as TensorFlow's host lists
	# take it): the ps listens there and says so in brackets, the workers
	# train.  SKIPPED where loopback has no ::1.
	ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128' || { echo "SKIPPED: no ::1 on lo"; rm -f "$out"; exit 77; }
	pslog=${TMPDIR:-/tmp}/rdmaps-e2e-$$-v6-ps.log
	wh="[::1]:1,[::1]:2"
	ps_host="[::1]"
	ps_listening 5000 1 0 --job_name=ps --worker_hosts="$wh" --sync_replicas --transport=tcp --timeout=60
	ps_host=
	grep -q "listening on \[::1\]:$p0" "$pslog" || { cat "$pslog" >"$out"; rm -f "$pslog"; fail "the ps did not say it listens on [::1]:$p0"; }
	two_workers "[::1]" --worker_hosts="$wh" --sync_replicas --transport=tcp
	check_ce 5000 2
	;;
clock_step)
	# The wall clock steps forward by an hour every 0.05 s in every task
	# (tests/train/clock_step.c, LD_PRELOAD; $5 is the library), as NTP or
	# `date -s` may step it: nothing times out, the job trains as any other.
	# Every deadline is on CLOCK_MONOTONIC; only the printed times (step
	# lines, "Training begins/ends @", --metrics "t") are the wall clock's,
	# as TensorFlow's time.time().  Until 2026-12-07 every deadline was on
	# the wall clock: a forward step ended a wait at once.
	shim=$5
	[ -f "$shim" ] || fail "no clock_step library at '$shim'"
	# (an ASan build wants its runtime first in the library list)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 RDMAPS_TEST_CLOCK_STEP=0.05,3600 \
		LD_PRELOAD="$shim" timeout 600 "$bin" launch --ps=1 --workers=2 --sync_replicas=True --transport="$tr" \
		--data_dir="$data" --train_steps=400 --log_every=100 --timeout=60 >"$out" 2>&1 \
		|| fail "launch exited non-zero under a stepping wall clock"
	! grep -q "clock_step:" "$out" || fail "the clock_step library was not set up"
	check_ce 900 2
	grep -q "global step 400, 400 updates, 800 gradients accepted, 0 dropped" "$out" \
		|| fail "ps summary: expected 400 updates from 800 gradients"
	# the steps did happen: the wall clock each worker printed moved by at
	# least an hour between "Training begins @" and "Training ends @",
	# while the elapsed time it printed (monotonic) stayed under 10 minutes
	for i in 0 1; do
		awk -v w="worker$i" 'index($0, "[" w "]") != 1 { next }
			/Training begins @/ { b = $NF } /Training ends @/ { e = $NF } /Training elapsed time:/ { el = $(NF - 1) }
			END { printf "  %s: wall clock moved %.0f s, elapsed %.2f s\n", w, e - b, el
			      exit !(b > 0 && e - b >= 3600 && el > 0 && el < 600) }' "$out" \
			|| fail "worker $i: no wall-clock step of >= 3600 s within training, or a bad elapsed time"
	done
	# the ps measured its own run on the monotonic clock too (it said
	# "done after 18000.8 s" and "the serve loop did not come round for
	# 3600.00 s" on the wall clock)
	grep "ps 0: done after " "$out" | awk '{ t = $6 + 0; print "  " $0; exit !(t > 0 && t < 600) }' \
		|| fail "the ps's own run time is not that of the job"
	! grep -q "did not come round for 3[0-9][0-9][0-9]" "$out" || fail "the ps took a clock step for a stall"
	;;
own_name)
	# Tasks named by a host name that resolves, on their own host, to a
	# loopback address only (Debian's installer maps a machine's own name
	# to 127.0.1.1 in /etc/hosts): the ps listens on every address, as a
	# TensorFlow ps does, and the workers, which reach it by its address as
	# workers on other hosts would, train; with rdma, the ps's RDMA
	# listener is the wildcard one and every task still takes rdma (before,
	# the ps listened on 127.0.1.1: refused; auto found no RDMA port there).
	# The VM tier's /init writes such an /etc/hosts (RDMAPS_OWN_NAME); the
	# tcp case over separate hosts is tests/train/multihost.sh.
	name=${RDMAPS_OWN_NAME:-}
	addr=${RDMAPS_RDMA_ADDR:-}
	{ [ -n "$name" ] && [ -n "$addr" ]; } || { echo "SKIPPED: needs RDMAPS_OWN_NAME (a name /etc/hosts maps to 127.0.1.1) and RDMAPS_RDMA_ADDR"; rm -f "$out"; exit 77; }
	pslog=${TMPDIR:-/tmp}/rdmaps-e2e-$$-own-ps.log
	wh=$name:1,$name:2
	ps_host=$name
	ps_listening 4000 1 0 --job_name=ps --worker_hosts="$wh" --sync_replicas --transport="$tr" --timeout=60
	ps_host=
	grep -q "listening on" "$pslog" || { cat "$pslog" >"$out"; rm -f "$pslog"; fail "the ps did not listen"; }
	two_workers "$addr" --worker_hosts="$wh" --sync_replicas --transport="$tr"
	grep -q "ps 0: $name resolves here to 127\.[0-9.]*, a loopback address only: listening on every address (0\.0\.0\.0)" "$out" \
		|| fail "the ps did not say that it listens on every address"
	grep -q "ps 0: transport $tr, listening on 0\.0\.0\.0:$p0" "$out" || fail "the ps did not listen on 0.0.0.0:$p0 over $tr"
	check_ce 5000 2
	grep "listening on\|resolves here" "$out" | sed 's/^/  /'
	[ "$tr" = tcp ] && { rm -f "$out"; echo "PASSED: $case over $tr"; exit 0; }
	n=$(grep -c "Worker [01]: $name resolves here to 127\.[0-9.]*, a loopback address only" "$out")
	[ "$n" -eq 2 ] || fail "expected both workers to say their name resolves to loopback, got $n"
	# `rdmaps devices NAME` answers for a task named so: any active port
	"$bin" devices "$name" >"$out" 2>&1; rc=$?
	sed 's/^/  /' "$out"
	[ $rc -eq 0 ] && grep -q "^$name resolves here to 127\.[0-9.]*, a loopback address only: a task named so listens on every address" "$out" \
		|| fail "'rdmaps devices $name' exited $rc or did not say that $name stands for every address"
	;;
*) echo "usage: e2e.sh BIN TRANSPORT DATA_DIR sync|async|backup|cli"; exit 2 ;;
esac
rm -f "$out"
echo "PASSED: $case over $tr"
