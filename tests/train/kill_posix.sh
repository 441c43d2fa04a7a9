#!/bin/sh
# Kill-and-restart tests in POSIX sh, so that they also run under busybox in
# the SoftRoCE VM (the rdma tier): the verbs twins of four of kill.sh's
# cases, small enough for the VM's time budget (few steps, a
# 6000-image MNIST cut).  Tasks are started by hand with TensorFlow's flags;
# every wait is bounded and waits for printed lines, never a fixed time.
# usage: kill_posix.sh RDMAPS_BIN TRANSPORT DATA_DIR CASE
#   worker_backup  sync, R=2 of W=3: kill -9 worker 2 mid-run; the ps names
#                  it, the job completes at --train_steps, all others exit 0
#   ps_restart     sync, W=2, --logdir, --save_model_secs=1: kill -9 the ps
#                  after a checkpoint, restart it: it restores, the workers
#                  report the loss and reconnect, the job completes at
#                  --train_steps, at most the steps since the last save lost
#   worker_rejoin  sync, R = W = 2, --barrier_timeout=2: kill -9 worker 1
#                  mid-run; the ps and worker 0 name it; restart it: the ps
#                  takes the new connection into its slot (new grants), the
#                  job completes at --train_steps
#   duplicate      sync, R = W = 2: a second live worker 1 is refused (it exits
#                  non-zero naming the reason, the ps logs it, the first goes
#                  on); then worker 1 is killed and restarted at once: the
#                  restart rejoins and the job completes
# Env: RDMAPS_KILL_STEPS (default 40; on the host's fast tcp use more).
# Address: 127.0.0.1 for tcp; RDMAPS_RDMA_ADDR (default 127.0.0.1) for rdma.
# Exit 0 pass, 1 fail, 77 skipped (no MNIST, or no RDMA device).
bin=$1; tr=$2; data=$3; case=$4
steps=${RDMAPS_KILL_STEPS:-40}
addr=127.0.0.1
[ "$tr" = rdma ] && addr=${RDMAPS_RDMA_ADDR:-127.0.0.1}
if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
	echo "SKIPPED: no MNIST in $data"; exit 77
fi
dir=${TMPDIR:-/tmp}/rdmaps-killp-$$-$case
rm -rf "$dir"
mkdir -p "$dir" || exit 1
cleanup() {
	for f in "$dir"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
# fail, now, wait_for, last_step, wait_step, saved_step, wait_ok and the
# checks both kill scripts make: lib.sh (beside this script)
fail_tail=25 poll=0.2
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

# start NAME JOB INDEX NWORKERS [flags]: a task in the background, through a
# subshell that records its pid (NAME.pid) and, once it ended, its exit
# status (NAME.rc): no reliance on the shell reaping background children.
start() {
	n_=$1; j_=$2; i_=$3; nw_=$4; shift 4
	wk_=""; k_=0
	while [ $k_ -lt "$nw_" ]; do wk_="$wk_${wk_:+,}$addr:$((port + 1 + k_))"; k_=$((k_ + 1)); done
	rm -f "$dir/$n_.pid" "$dir/$n_.rc"
	(
		"$bin" --job_name="$j_" --task_index="$i_" --ps_hosts="$addr:$port" --worker_hosts="$wk_" \
			--transport="$tr" --data_dir="$data" --sync_replicas=True --log_every=1 --timeout=60 "$@" \
			>"$dir/$n_.log" 2>&1 &
		echo $! >"$dir/$n_.pid.tmp"
		mv "$dir/$n_.pid.tmp" "$dir/$n_.pid"
		wait $!
		echo $? >"$dir/$n_.rc.tmp"
		mv "$dir/$n_.rc.tmp" "$dir/$n_.rc"
	) &
	until [ -s "$dir/$n_.pid" ]; do sleep 0.05; done
}
kill9() { kill -9 "$(cat "$dir/$1.pid")"; }
# wait_exit NAME SECS: until the task ended; its exit status in $st
wait_exit() {
	end_=$(($(now) + $2))
	until [ -s "$dir/$1.rc" ]; do
		[ "$(now)" -ge $end_ ] && fail "$1 still running after $2 s"
		sleep "$poll"
	done
	st=$(cat "$dir/$1.rc")
	rm -f "$dir/$1.pid"
}
# start_ps NAME NWORKERS [flags]: the first ps, on a free port (3 tries);
# exits 77 when the transport has no device
start_ps() {
	sn_=$1; snw_=$2; shift 2
	for try_ in 1 2 3; do
		# below the ephemeral range (32768-60999 on Debian), which
		# connect()s (rdma_cm's too) draw their local ports from
		port=$((10000 + ($$ * 7 + try_ * 1009) % 6000))
		start "$sn_" ps 0 "$snw_" "$@"
		wait_for "$dir/$sn_.log" "listening on|cannot listen|no active RDMA device|built without the verbs" 60 \
			|| fail "the ps neither listened nor failed within 60 s"
		if grep -q "no active RDMA device\|built without the verbs" "$dir/$sn_.log"; then
			echo "SKIPPED: no RDMA device"; exit 77
		fi
		grep -q "listening on" "$dir/$sn_.log" && return 0
		wait_exit "$sn_" 30
	done
	fail "the ps could not listen on 3 ports"
}

case $case in
worker_backup)
	f="--replicas_to_aggregate=2 --train_steps=$steps"
	# shellcheck disable=SC2086
	start_ps ps0 3 $f
	# shellcheck disable=SC2086
	for i in 0 1 2; do start w$i worker $i 3 $f; done
	wait_step "$dir/w2.log" 3 240 || fail "worker 2 did not reach global step 3"
	kill9 w2
	wait_exit w2 30
	killed_at=$(last_step "$dir/w2.log")
	echo "  killed worker 2 (SIGKILL) at global step $killed_at"
	[ "$killed_at" -lt "$steps" ] || fail "worker 2 was killed after the end: not a mid-run kill"
	wait_ok 240 w0 w1 ps0
	check_backup_done "$steps"
	grep -h "transport\|lost worker\|left without\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	;;
ps_restart)
	f="--train_steps=$steps --logdir=$dir/ckpt --save_model_secs=1 --recovery_timeout=90"
	# shellcheck disable=SC2086
	start_ps ps0 2 $f
	# shellcheck disable=SC2086
	for i in 0 1; do start w$i worker $i 2 $f; done
	save_then_kill ps0 "the ps" 240 2
	wait_exit ps0 30
	ps_killed "$steps" 120
	# shellcheck disable=SC2086
	start ps0b ps 0 2 $f
	wait_ok 240 w0 w1 ps0b
	check_ps_restored "$steps"
	grep -h "transport\|lost ps\|reconnected\|restored\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	;;
ps_async_stop_kill)
	# async: the ps is stopped (SIGSTOP), so that both workers finish their
	# pull and push (rxe serves them without the ps's CPU) and then wait,
	# with nothing outstanding, for the ps to take their gradients; then it
	# is SIGKILLed.  Each worker learns it from the header READ it makes
	# after --barrier_timeout (2 s), reconnects and trains on with the
	# restarted ps.  Until stop 37 only sync workers made that READ: an
	# async one waited out --timeout (60 s here) and stopped ("no release
	# from ps 0 within 60 s"), exit 1
	f="--train_steps=$steps --sync_replicas=False --barrier_timeout=2 --logdir=$dir/ckpt --save_model_secs=1 --recovery_timeout=90"
	# shellcheck disable=SC2086
	start_ps ps0 2 $f
	# shellcheck disable=SC2086
	for i in 0 1; do start w$i worker $i 2 $f; done
	save_then_wait ps0 "the ps" 240 2
	kill -STOP "$(cat "$dir/ps0.pid")"
	sleep 1
	saved=$(saved_step "$dir/ps0.log")
	kill9 ps0
	wait_exit ps0 30
	t0_=$(now)
	for i_ in 0 1; do
		wait_for "$dir/w$i_.log" "Worker $i_: lost ps 0" 50 || fail "worker $i_ did not report the lost ps within 50 s"
	done
	echo "  stopped, then killed the ps (its last checkpoint: global step $saved); both workers lost it within $(($(now) - t0_)) s"
	# shellcheck disable=SC2086
	start ps0b ps 0 2 $f
	wait_ok 240 w0 w1 ps0b
	# (a save may have completed between the STOP and its line)
	restored=$(restored_step "$dir/ps0b.log")
	[ -n "$restored" ] && [ "$restored" -ge "$saved" ] \
		|| fail "the restarted ps restored '$restored', not global step $saved or later"
	check_reconnected_finished
	# (async: the workers stop once they pulled a step >= --train_steps;
	# gradients pushed on the way still count)
	final_=$(sed -n 's/.*done after .*: global step \([0-9]*\), .*/\1/p' "$dir/ps0b.log")
	[ -n "$final_" ] && [ "$final_" -ge "$steps" ] || fail "final global step '$final_' is below $steps"
	grep -h "lost ps\|reconnected\|restored\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	;;
worker_rejoin)
	f="--train_steps=$steps --barrier_timeout=2"
	# shellcheck disable=SC2086
	start_ps ps0 2 $f
	# shellcheck disable=SC2086
	for i in 0 1; do start w$i worker $i 2 $f; done
	wait_step "$dir/w1.log" 3 240 || fail "worker 1 did not reach global step 3"
	kill9 w1
	rejoin_killed "$steps"   # lib.sh: the barrier-timeout messages name worker 1
	wait_exit w1 30
	# shellcheck disable=SC2086
	start w1b worker 1 2 $f
	wait_ok 240 w1b w0 ps0
	check_rejoined "$steps" w1b
	;;
duplicate)
	# worker 0 sleeps 100 ms per step (--straggler_delay_ms): the job
	# outlasts the duplicate's start-up even where steps are fast (tcp on
	# the host: RDMAPS_KILL_STEPS=40 takes >= 4 s)
	f="--train_steps=$steps --straggler_task=0 --straggler_delay_ms=100"
	# shellcheck disable=SC2086
	start_ps ps0 2 $f
	# shellcheck disable=SC2086
	for i in 0 1; do start w$i worker $i 2 $f; done
	wait_step "$dir/w1.log" 3 240 || fail "worker 1 did not reach global step 3"
	# shellcheck disable=SC2086
	start dup worker 1 2 $f
	wait_exit dup 120
	[ "$st" -ne 0 ] || fail "the second live worker 1 exited 0"
	grep -q "Worker 1: cannot connect to ps 0 at .*: task index already in use" "$dir/dup.log" \
		|| fail "the second worker 1 did not name the reason"
	grep -q "ps 0: refused a second worker 1: worker 1 is connected and alive" "$dir/ps0.log" \
		|| fail "the ps did not log the refused duplicate"
	echo "  second worker 1: exit $st: $(grep 'already in use' "$dir/dup.log" | head -1)"
	echo "  $(grep 'refused a second' "$dir/ps0.log" | head -1)"
	kill -0 "$(cat "$dir/w1.pid")" 2>/dev/null || fail "the first worker 1 died"
	# the first keeps training after the refusal
	at=$(last_step "$dir/w1.log")
	wait_step "$dir/w1.log" $((at + 3)) 240 || fail "worker 1 stopped training after the refused duplicate"
	# killed and restarted at once (no wait for the ps to notice): it rejoins
	kill9 w1
	wait_exit w1 30
	killed_at=$(last_step "$dir/w1.log")
	[ "$killed_at" -lt "$steps" ] || fail "worker 1 was killed after the end: not a mid-run kill"
	# shellcheck disable=SC2086
	start w1b worker 1 2 $f
	wait_ok 240 w1b w0 ps0
	grep -q "ps 0: worker 1 rejoined" "$dir/ps0.log" || fail "the restarted worker 1 did not rejoin"
	grep -q "global step $steps, " "$dir/ps0.log" || fail "final global step is not $steps"
	for l in w0 w1b; do grep -q "validation cross entropy" "$dir/$l.log" || fail "$l did not finish"; done
	grep -h "lost worker\|connected again\|rejoined\|done after" "$dir/ps0.log" | sed 's/^/  /'
	;;
*) echo "usage: kill_posix.sh BIN TRANSPORT DATA_DIR worker_backup|ps_restart|ps_async_stop_kill|worker_rejoin|duplicate"; exit 2 ;;
esac
echo "PASSED: $case over $tr"
