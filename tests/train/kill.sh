#!/bin/bash
# Kill-and-restart tests (tcp tier, loopback): ps and worker tasks started by
# hand with TensorFlow's flags, one killed with SIGKILL mid-run, and (b, c)
# restarted with the same task index.  Every wait is bounded; the script
# waits for printed lines, never for a fixed time.
# usage: kill.sh RDMAPS_BIN DATA_DIR CASE
#   worker_backup  (a) sync, R=2 of W=3: kill worker 2; the job completes
#   worker_rejoin  (b) sync, R=W=2: kill worker 1; both ps and worker 0 name it
#                  after --barrier_timeout; restart it: it rejoins, job completes
#   ps_restart     (c) sync, --logdir, --save_model_secs=1: kill the ps, restart
#                  it: it restores, the workers reconnect, the job completes at
#                  --train_steps, and at most the steps since the last save are lost
#   duplicate      sync, R=W=2: a second live worker 1 is refused (also when
#                  held across a 4 s stop of the ps; it exits
#                  non-zero naming the reason, the ps logs it, training goes
#                  on); then worker 1 is killed and restarted at once: the
#                  restart rejoins and the job completes
#   ps_skew        2 ps, sync, --logdir: kill ps 1 some steps after its save,
#                  restart it: the shards now hold different global steps;
#                  every worker that sees them more than 1 apart says so
#                  (and none says so when they are not); the job completes
#   finished_early sync, R=W=2, worker 0 given --train_steps=100 and worker 1
#                  100000, so that worker 0 finishes while worker 1 still
#                  trains.  (A) the ps gives up after --timeout (the step no
#                  longer moves) and worker 1 after --recovery_timeout, both
#                  exit 1 naming why; (B) the same, the ps killed after worker 0
#                  finished and restarted: it restores, worker 1 rejoins, the
#                  ps names worker 0 as missing, both exit 1 within the bounds
#   start_skew     2 ps, --logdir, whole jobs through `rdmaps launch`: restarted
#                  on checkpoints of one step (no skew line), then with ps 1's
#                  newest file corrupt (ps 1 restores an older step) and with
#                  ps 0's newest files removed, then all of them: the chief
#                  names both steps, once
#   ckpt_restore   --logdir through `rdmaps launch`: clean start said, restore,
#                  a corrupt newest file named and the previous one used;
#                  another --workers and another model over the checkpoints:
#                  refused (exit 1, named), the files untouched; a second ps
#                  on the same logdir refused; a bad logdir an error
#   ps_pause       sync, R=W=2, --barrier_timeout=1: the ps stopped (SIGSTOP)
#                  for 3 s, then continued: the workers name the barrier
#                  timeout and the job completes (it failed: the header READ
#                  of the worker's report took a push's completion); then a
#                  job whose ps stays stopped: each worker exits 1 within
#                  --timeout + --recovery_timeout (4 + 1 s) and a margin, not
#                  --barrier_timeout + 2 x --timeout as before; the same
#                  with 796 ops per pull and push (RDMAPS_MAX_OP_BYTES)
# Exit 0 pass, 1 fail, 77 skipped (no data).
set -u
bin=$1; data=$2; case=$3
if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
	echo "SKIPPED: no MNIST in $data"; exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-kill-XXXXXX")
dir=$(cd "$dir" && pwd -P) # as the kernel names it (strace -y in ckpt_restore)
declare -A pid
cleanup() {
	for k in "${!pid[@]}"; do kill -9 "${pid[$k]}" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
# fail, now, wait_for, last_step, wait_step, saved_step, wait_ok and the
# checks both kill scripts make: lib.sh (beside this script, POSIX sh)
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

# n distinct free loopback ports, below the ephemeral range, as `rdmaps
# launch` picks them (`rdmaps ports`, src/cli/ports.c): a restarted task
# binds its port again, and a port inside that range can meanwhile be taken
# as the local port of a worker's connect retry
free_ports() {
	"$bin" ports "$1"
}

# wait_exit NAME SECS: wait for the task to exit; its status in $st
wait_exit() {
	local end=$((SECONDS + $2)) p=${pid[$1]}
	while kill -0 "$p" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then fail "$1 still running after $2 s"; fi
		sleep 0.1
	done
	wait "$p"; st=$?
	unset "pid[$1]"
}
# kill9 NAME: SIGKILL the task, reap it, forget it
kill9() {
	kill -9 "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null; unset "pid[$1]"
}

read -r -a ports <<<"$(free_ports 6)" || fail "no free ports"
[ ${#ports[@]} -eq 6 ] || fail "no free ports"
nps=1
# start NAME JOB INDEX NWORKERS LOG [extra flags]  ($nps ps tasks)
start() {
	local name=$1 job=$2 idx=$3 nw=$4 log=$5; shift 5
	local ph="127.0.0.1:${ports[0]}" wk="127.0.0.1:${ports[$nps]}"
	for ((k = 1; k < nps; k++)); do ph="$ph,127.0.0.1:${ports[$k]}"; done
	for ((k = 1; k < nw; k++)); do wk="$wk,127.0.0.1:${ports[$((nps + k))]}"; done
	"$bin" --job_name="$job" --task_index="$idx" --ps_hosts="$ph" --worker_hosts="$wk" \
		--transport=tcp --data_dir="$data" --sync_replicas=True --log_every=10 --timeout=90 "$@" \
		>"$dir/$log.log" 2>&1 &
	pid[$name]=$!
}

# run LOG STEPS [flags]: a whole job ($nps ps, 2 workers, sync) through
# `rdmaps launch`, with --logdir=$ck; fails the test on a non-zero exit
ck="$dir/ckpt"
run() {
	local log=$1 steps=$2; shift 2
	timeout 300 "$bin" launch --ps=$nps --workers=2 --sync_replicas --transport=tcp --data_dir="$data" \
		--log_every=50 --timeout=60 --logdir="$ck" --train_steps="$steps" "$@" >"$dir/$log.log" 2>&1 \
		|| fail "launch ($log) exited non-zero"
}
skew_re="the ps shards are at different global steps"

# stopped_ps_job STEP WHAT: ps 0 and workers 0 and 1 with the flags in
# f (--timeout=4 --recovery_timeout=1); once worker 0 printed global step
# STEP the ps is stopped (SIGSTOP) for good.  Each worker must exit 1
# within 8 s, saying that it gave up after --timeout or
# --recovery_timeout; the time they took is left in took_.  WHAT names
# the job in failures.  A variable assigned before the call reaches
# every task (bash exports it for the call).
stopped_ps_job() {
	local step=$1 what=$2
	start ps0 ps 0 2 ps0 "${f[@]}"
	for i in 0 1; do start w$i worker $i 2 w$i "${f[@]}"; done
	wait_step "$dir/w0.log" "$step" 120 || fail "worker 0 did not reach global step $step ($what)"
	kill -STOP "${pid[ps0]}"
	t0_=$(now)
	for t_ in w0 w1; do
		wait_exit "$t_" 30
		[ "$st" -eq 1 ] || fail "$t_ exited $st with its ps stopped ($what), expected 1"
	done
	took_=$(($(now) - t0_))
	kill -9 "${pid[ps0]}"; kill -CONT "${pid[ps0]}" 2>/dev/null; wait "${pid[ps0]}" 2>/dev/null; unset "pid[ps0]"
	for t_ in 0 1; do
		grep -q "Worker $t_: no release from ps 0 within 4 s (--timeout)\|Worker $t_: ps 0 did not come back within 1 s" \
			"$dir/w$t_.log" || fail "worker $t_ did not say it gave up after --timeout ($what)"
	done
	grep -h "lost ps\|no release from\|did not come back" "$dir"/w*.log | sed 's/^/  /'
	[ "$took_" -le 8 ] || fail "the workers took $took_ s to give up on a stopped ps ($what; --timeout=4, --recovery_timeout=1)"
}

case $case in
ps_pause)
	steps=60
	# >= 12 s of training (200 ms per step on worker 0): the pause comes
	# before the end, and worker 1 waits for its release most of the time
	# (the wait whose report failed; a worker stopped in a pull or a push
	# reports nothing: CI of 4aeb2cd, worker 0 there).  Until stop 27:
	# 600 steps at 10 ms, too short a share of a step under TSan (its
	# pulls, pushes and the ps's apply take ~30 ms there): the tsan tier
	# of cb40bdb's CI failed here once.  The stop follows worker 1's step
	# line, printed after its push, when it waits some 200 ms for worker
	# 0's; until stop 33 it followed worker 0's, printed after the push
	# that releases both, so it could land while both pulled (a review:
	# under TSan a pull takes ~30 ms of the 0-110 ms the script takes to
	# see the line and stop the ps).
	f=(--train_steps="$steps" --barrier_timeout=1 --straggler_task=0 --straggler_delay_ms=200)
	start ps0 ps 0 2 ps0 "${f[@]}"
	for i in 0 1; do start w$i worker $i 2 w$i "${f[@]}"; done
	wait_step "$dir/w1.log" 20 120 || fail "worker 1 did not reach global step 20"
	kill -STOP "${pid[ps0]}"
	sleep 3
	kill -CONT "${pid[ps0]}"
	wait_ok 180 w0 w1 ps0
	grep -q "barrier timeout: waited" "$dir/w0.log" "$dir/w1.log" || fail "no worker named the barrier timeout of the pause"
	grep -q "global step $steps, " "$dir/ps0.log" || fail "final global step is not $steps"
	grep -h "barrier timeout\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	# the ps says how long it did not run (a gap in training is placed)
	gap_=$(sed -n 's/^ps 0: the serve loop did not come round for \([0-9.]*\) s.*/\1/p' "$dir/ps0.log" | sort -n | tail -1)
	[ -n "$gap_" ] && awk "BEGIN{exit !($gap_ >= 2.5)}" || fail "the ps did not say that it was stopped for 3 s (saw '$gap_')"
	echo "  the ps: the serve loop did not come round for $gap_ s"
	# async, one worker (200 ms per step): the pause finds it computing
	# and then waiting to have its gradient taken; after --barrier_timeout
	# it READs the ps's header to learn whether the ps is there at all (a
	# dead ps fails that READ; until stop 37 only sync workers read, so
	# over verbs an async worker whose ps died there waited out --timeout
	# and stopped), says so once the stopped ps answers, and trains on
	for t_ in ps0 w0; do rm -f "$dir/$t_.log"; done
	f=(--train_steps=40 --sync_replicas=False --barrier_timeout=1 --straggler_task=0 --straggler_delay_ms=200)
	start ps0 ps 0 1 ps0 "${f[@]}"
	start w0 worker 0 1 w0 "${f[@]}"
	wait_step "$dir/w0.log" 10 120 || fail "async: worker 0 did not reach global step 10"
	kill -STOP "${pid[ps0]}"
	sleep 3
	kill -CONT "${pid[ps0]}"
	wait_ok 180 w0 ps0
	grep -q "waited [0-9]* s for ps 0 to take my gradient; it answers a read" "$dir/w0.log" \
		|| fail "async: the worker did not read the stopped ps's header after --barrier_timeout"
	! grep -q "barrier timeout" "$dir/w0.log" || fail "async: a barrier message from an async worker"
	grep -h "take my gradient\|done after" "$dir"/w0.log "$dir"/ps0.log | sed 's/^/  async: /'
	# the ps stays stopped: every worker gives up within --timeout
	for t_ in ps0 w0 w1; do rm -f "$dir/$t_.log"; done
	# (worker 0 computes 5 ms per step, so that worker 1 mostly waits for
	# its release when the ps stops; worker 0, in its push or pull, gives
	# up after --timeout and then --recovery_timeout)
	f=(--train_steps=100000 --barrier_timeout=1 --timeout=4 --recovery_timeout=1 --straggler_task=0
		--straggler_delay_ms=5)
	stopped_ps_job 100 "second job"
	echo "  a ps stopped for good: both workers exit 1 after ${took_} s (--timeout=4, --recovery_timeout=1)"
	# the same with 796 ops per pull and per push (RDMAPS_MAX_OP_BYTES=400:
	# more than a tcp connection holds at once, 255): a post that finds no
	# room within --timeout is the timeout it is (lost ps, no reconnect
	# within --recovery_timeout, exit 1), as a completion wait's.  Until
	# stop 33 a full queue ended the worker at once as a refused
	# operation ("stopping: ... resource temporarily unavailable").
	for t_ in ps0 w0 w1; do rm -f "$dir/$t_.log"; done
	RDMAPS_MAX_OP_BYTES=400 stopped_ps_job 20 "796 ops per phase"
	grep -q "in 796 READs / WRITEs" "$dir/w0.log" || fail "worker 0 did not split its pieces into 796 ops"
	! grep -h "stopping: an operation" "$dir"/w*.log || fail "a worker took a full queue for a refused operation"
	echo "  the same with 796 ops per phase: both workers exit 1 after ${took_} s"
	;;
worker_backup)
	steps=400
	f=(--replicas_to_aggregate=2 --train_steps="$steps")
	start ps0 ps 0 3 ps0 "${f[@]}"
	for i in 0 1 2; do start w$i worker $i 3 w$i "${f[@]}"; done
	wait_step "$dir/w2.log" 50 120 || fail "worker 2 did not reach global step 50"
	kill9 w2
	killed_at=$(last_step "$dir/w2.log")
	echo "  killed worker 2 (SIGKILL) at global step $killed_at"
	wait_ok 180 w0 w1 ps0
	[ "$killed_at" -lt $steps ] || fail "worker 2 was killed after the end: not a mid-run kill"
	check_backup_done $steps
	grep -h "lost worker\|left without\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	;;
worker_rejoin)
	steps=300
	# >= 0.9 s of training (3 ms per step on worker 0): the kill comes before the end
	f=(--train_steps="$steps" --barrier_timeout=2 --straggler_task=0 --straggler_delay_ms=5)
	start ps0 ps 0 2 ps0 "${f[@]}"
	start w0 worker 0 2 w0 "${f[@]}"
	start w1 worker 1 2 w1 "${f[@]}" --metrics="$dir/m1.jsonl"
	wait_step "$dir/w1.log" 50 120 || fail "worker 1 did not reach global step 50"
	kill9 w1
	before_=$(wc -l <"$dir/m1.jsonl")
	rejoin_killed $steps     # lib.sh: the barrier-timeout messages name worker 1
	start w1b worker 1 2 w1b "${f[@]}" --metrics="$dir/m1.jsonl"
	wait_ok 180 w1b w0 ps0
	check_rejoined $steps w1b
	# the restarted worker appended its records to its predecessor's (a
	# new job's worker empties the file; "w" lost the first run's steps)
	starts_=$(grep -c '"local_step":1,' "$dir/m1.jsonl")
	after_=$(wc -l <"$dir/m1.jsonl")
	[ "$starts_" -eq 2 ] && [ "$after_" -gt "$before_" ] \
		|| fail "--metrics of the restarted worker 1: $starts_ runs, $after_ lines (the killed one wrote $before_)"
	echo "  --metrics of worker 1: the killed run's $before_ records, then the restart's: $after_ lines"
	;;
duplicate)
	# the duplicate must find the job running: worker 0 sleeps 5 ms per step
	# (--straggler_delay_ms), so the 1500 steps take >= 7.5 s however fast
	steps=1500
	f=(--train_steps="$steps" --straggler_task=0 --straggler_delay_ms=5)
	start ps0 ps 0 2 ps0 "${f[@]}"
	for i in 0 1; do start w$i worker $i 2 w$i "${f[@]}"; done
	wait_step "$dir/w1.log" 30 120 || fail "worker 1 did not reach global step 30"
	start dup worker 1 2 dup "${f[@]}"
	wait_exit dup 60
	[ "$st" -ne 0 ] || fail "the second live worker 1 exited 0"
	grep -q "Worker 1: cannot connect to ps 0 at .*: task index already in use" "$dir/dup.log" \
		|| fail "the second worker 1 did not name the reason"
	grep -q "ps 0: refused a second worker 1: worker 1 is connected and alive" "$dir/ps0.log" \
		|| fail "the ps did not log the refused duplicate"
	echo "  second worker 1: exit $st: $(grep '^Worker 1: .*already in use' "$dir/dup.log")"
	echo "  $(grep 'refused a second' "$dir/ps0.log")"
	kill -0 "${pid[w1]}" 2>/dev/null || fail "the first worker 1 died"
	# the first keeps training: it makes progress after the refusal
	at=$(last_step "$dir/w1.log")
	wait_step "$dir/w1.log" $((at + 20)) 120 || fail "worker 1 stopped training after the refused duplicate"
	# A duplicate whose check spans a stop of the ps: worker 1 is stopped
	# (it cannot answer the liveness WRITE) until the duplicate is held,
	# then the ps is stopped for 4 s and worker 1 continued, so its answer
	# waits unread in the ps's socket.  At its resume the ps must read it
	# and refuse the duplicate; its check's clock used to count the stop,
	# so it replaced the live worker 1 with the duplicate (a review).
	n_=$(grep -c "connected again while its connection is held" "$dir/ps0.log")
	t0_=$(date +%s.%N)
	kill -STOP "${pid[w1]}"
	start dup2 worker 1 2 dup2 "${f[@]}"
	end_=$((SECONDS + 20))
	until [ "$(grep -c "connected again while its connection is held" "$dir/ps0.log")" -gt "$n_" ]; do
		[ $SECONDS -ge $end_ ] && fail "the ps did not hold the second duplicate"
		sleep 0.02
	done
	kill -STOP "${pid[ps0]}"
	held_=$(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0_}")
	kill -CONT "${pid[w1]}"
	sleep 4
	kill -CONT "${pid[ps0]}"
	echo "  second duplicate held $held_ s after worker 1 was stopped; the ps stopped 4 s"
	wait_exit dup2 60
	[ "$st" -ne 0 ] || fail "the second duplicate worker 1 exited 0 (it replaced the live one)"
	[ "$(grep -c "ps 0: refused a second worker 1: worker 1 is connected and alive" "$dir/ps0.log")" -ge 2 ] \
		|| fail "the ps did not refuse the duplicate held across its stop"
	grep -q "its previous connection is dead" "$dir/ps0.log" && fail "the ps replaced the live worker 1"
	kill -0 "${pid[w1]}" 2>/dev/null || fail "the first worker 1 died"
	at=$(last_step "$dir/w1.log")
	wait_step "$dir/w1.log" $((at + 20)) 120 || fail "worker 1 stopped training after the second duplicate"
	# killed and restarted at once (no wait for the ps to notice): it rejoins
	kill9 w1
	killed_at=$(last_step "$dir/w1.log")
	[ "$killed_at" -lt $steps ] || fail "worker 1 was killed after the end"
	start w1b worker 1 2 w1b "${f[@]}"
	wait_ok 180 w1b w0 ps0
	grep -q "ps 0: worker 1 rejoined" "$dir/ps0.log" || fail "the restarted worker 1 did not rejoin"
	grep -q "global step $steps, " "$dir/ps0.log" || fail "final global step is not $steps"
	for l in w0 w1b; do grep -q "validation cross entropy" "$dir/$l.log" || fail "$l did not finish"; done
	grep -h "lost worker\|connected again\|rejoined\|done after" "$dir"/ps0.log | sed 's/^/  /'
	;;
ps_skew)
	steps=1500; nps=2
	# >= 7.5 s of training (5 ms per step on worker 0): a save every 2 s falls inside
	f=(--train_steps="$steps" --logdir="$dir/ckpt" --save_model_secs=2 --recovery_timeout=60
		--straggler_task=0 --straggler_delay_ms=5)
	start ps0 ps 0 2 ps0 "${f[@]}"
	start ps1 ps 1 2 ps1 "${f[@]}"
	for i in 0 1; do start w$i worker $i 2 w$i "${f[@]}"; done
	# 6 steps past the save: a skew needs a worker more than 1 ahead of the
	# checkpoint, and the kill must come before the next save 2 s later
	# (30 steps cut that to 0.3 s under TSan, ~55 ms a step: a CI run
	# killed right after that next save, and there was no skew to report)
	save_then_kill ps1 "ps 1" 120 6
	echo "  killed ps 1 (SIGKILL) at global step >= $(last_step "$dir/w0.log"); its last checkpoint: $(saved_step "$dir/ps1.log")"
	# the worker that next touches shard 1 notices (the other may be waiting
	# for shard 0, which waits for that worker's gradient)
	end=$((SECONDS + 60))
	until grep -q "Worker [01]: lost ps 1" "$dir/w0.log" "$dir/w1.log"; do
		[ $SECONDS -ge $end ] && fail "no worker reported the lost ps 1"
		sleep 0.1
	done
	start ps1b ps 1 2 ps1b "${f[@]}"
	wait_ok 240 w0 w1 ps0 ps1b
	grep -q "ps 1: restored checkpoint .*shard-1-step-" "$dir/ps1b.log" || fail "the restarted ps 1 restored nothing"
	grep -q "global step $steps, " "$dir/ps0.log" || fail "ps 0 did not end at global step $steps"
	nskew=0
	for i in 0 1; do
		line=$(grep "Worker $i: reconnected to ps 1" "$dir/w$i.log") || fail "worker $i did not reconnect to ps 1"
		now_v=$(sed -n 's/.*its global step is \([0-9]*\) (I held \(-*[0-9]*\)).*/\1/p' <<<"$line")
		held=$(sed -n 's/.*its global step is \([0-9]*\) (I held \(-*[0-9]*\)).*/\2/p' <<<"$line")
		if [ $((held - now_v)) -gt 1 ]; then
			grep -q "Worker $i: the ps shards are at different global steps: ps 0 at [0-9]*, ps 1 at $now_v " \
				"$dir/w$i.log" || fail "worker $i: ps 1 came back at $now_v (it held $held) and no skew was reported"
			nskew=$((nskew + 1))
		elif grep -q "different global steps" "$dir/w$i.log"; then
			fail "worker $i reported a skew, but ps 1 came back at $now_v and it held $held"
		fi
	done
	[ $nskew -gt 0 ] || fail "the kill landed right after a save: no skew to report (ps 1 restored within 1 step)"
	grep -h "restored\|different global steps\|reconnected to\|done after" "$dir"/*.log | sed 's/^/  /'
	;;
start_skew)
	# whole jobs restarted on the checkpoints of the one before (2 ps, each
	# restoring its own newest valid file): the chief, and only it, reports
	# shards restored at different steps after its first pull, naming both
	nps=2
	run s1 100
	grep -q "ps 1: saved checkpoint $ck/shard-1-step-100.ckpt" "$dir/s1.log" || fail "s1: ps 1 saved no checkpoint at 100"
	run s2 150 # control: both shards restored at 100, nothing changed
	for i in 0 1; do
		grep -q "ps $i: restored checkpoint $ck/shard-$i-step-100.ckpt (global step 100)" "$dir/s2.log" \
			|| fail "s2: ps $i did not restore step 100"
		grep -q "ps $i: saved checkpoint $ck/shard-$i-step-150.ckpt" "$dir/s2.log" || fail "s2: ps $i saved no step 150"
	done
	grep -q "$skew_re" "$dir/s1.log" "$dir/s2.log" && fail "a skew was reported, but the shards were restored at the same step"
	# ps 1's newest file goes bad (one byte flipped): it restores step 100,
	# ps 0 its step 150
	printf '\377' | dd of="$ck/shard-1-step-150.ckpt" bs=1 seek=1000 conv=notrunc 2>/dev/null
	run s3 200
	grep -q "skipping $ck/shard-1-step-150.ckpt: " "$dir/s3.log" || fail "s3: ps 1 did not skip its corrupt newest file"
	grep -q "ps 1: restored checkpoint $ck/shard-1-step-100.ckpt (global step 100)" "$dir/s3.log" \
		|| fail "s3: ps 1 did not restore step 100"
	grep -q "ps 0: restored checkpoint $ck/shard-0-step-150.ckpt (global step 150)" "$dir/s3.log" \
		|| fail "s3: ps 0 did not restore step 150"
	grep -q "Worker 0: $skew_re: ps 0 at 150, ps 1 at 100 (50 apart at session start: the shards were restored from checkpoints of different steps)" \
		"$dir/s3.log" || fail "s3: the chief did not report the shards restored at 150 and 100"
	[ "$(grep -c "$skew_re" "$dir/s3.log")" -eq 1 ] || fail "s3: the skew was reported more than once (by the chief only, once)"
	grep -q "ps 0: done after .*: global step 200, " "$dir/s3.log" || fail "s3: ps 0 did not end at 200"
	grep -q "ps 1: done after .*: global step 150, " "$dir/s3.log" || fail "s3: ps 1 did not end at 150 (50 updates from 100)"
	# the other way round, a file lost: ps 0's two newest removed, it
	# restores 100 while ps 1 restores the 150 it saved in s3
	rm -f "$ck/shard-0-step-200.ckpt" "$ck/shard-0-step-150.ckpt"
	run s4 130
	grep -q "Worker 0: $skew_re: ps 0 at 100, ps 1 at 150 (50 apart at session start: " "$dir/s4.log" \
		|| fail "s4: the chief did not report the shards restored at 100 and 150"
	grep -q "ps 1: restored checkpoint $ck/shard-1-step-150.ckpt (global step 150)" "$dir/s4.log" \
		|| fail "s4: ps 1 did not restore step 150"
	grep -q "ps 0: done after .*: global step 130, " "$dir/s4.log" || fail "s4: ps 0 did not end at 130"
	# no file of shard 0 left: ps 0 starts clean (the chief initializes it),
	# ps 1 restores the 180 it reached in s4
	rm -f "$ck"/shard-0-*
	run s5 20
	grep -q "Worker 0: $skew_re: ps 0 at 0 (no checkpoint: initialized now), ps 1 at 180 (180 apart at session start: some shards were restored from a checkpoint, others started clean)" \
		"$dir/s5.log" || fail "s5: the chief did not report ps 0 started clean and ps 1 restored at 180"
	grep -h "skipping\|restored\|$skew_re" "$dir"/s*.log | sed 's/^/  /'
	;;
finished_early)
	f=(--logdir="$dir/ckpt" --save_model_secs=1 --timeout=5 --barrier_timeout=2 --recovery_timeout=5)
	for phase in A B; do
		rm -rf "$dir/ckpt"
		# The workers first, the ps once both have loaded their data and
		# are connecting: with --timeout=5 a ps started first gives up on
		# workers still loading MNIST (seen under TSan on 2 busy cores),
		# and they then find no ps.
		start w0$phase worker 0 2 w0$phase "${f[@]}" --train_steps=100
		start w1$phase worker 1 2 w1$phase "${f[@]}" --train_steps=100000
		wait_for "$dir/w0$phase.log" "Initializing session" 120 || fail "($phase) worker 0 did not start"
		wait_for "$dir/w1$phase.log" "Waiting for session" 120 || fail "($phase) worker 1 did not start"
		start ps0$phase ps 0 2 ps0$phase "${f[@]}"
		wait_exit w0$phase 120
		[ "$st" -eq 0 ] || fail "($phase) worker 0 exited $st"
		grep -q "validation cross entropy" "$dir/w0$phase.log" || fail "($phase) worker 0 did not finish"
		t0=$SECONDS
		if [ $phase = A ]; then
			wait_exit ps0A 30
			[ "$st" -eq 1 ] || fail "(A) the ps exited $st, expected 1"
			grep -Eq "ps 0: giving up: training ended \(global step 100, 1 worker\(s\) finished\) but for 5 s \(--timeout\) the others neither finished nor left: worker 1( |$)" \
				"$dir/ps0A.log" || fail "(A) the ps did not say why it gave up"
			wait_exit w1A 30
			[ "$st" -eq 1 ] || fail "(A) worker 1 exited $st, expected 1"
			grep -q "Worker 1: ps 0 did not come back within 5 s (--recovery_timeout)" "$dir/w1A.log" \
				|| fail "(A) worker 1 did not say why it stopped"
			echo "  (A) after worker 0 finished: ps and worker 1 exited 1 within $((SECONDS - t0)) s"
			grep -h "giving up\|did not come back" "$dir"/ps0A.log "$dir"/w1A.log | sed 's/^/    /'
		else
			# a checkpoint to restore: the step stopped moving, one comes within 1 s
			wait_for "$dir/ps0B.log" "saved checkpoint" 30 || fail "(B) the ps saved no checkpoint"
			kill9 ps0B
			start ps0C ps 0 2 ps0C "${f[@]}"
			wait_exit ps0C 40
			[ "$st" -eq 1 ] || fail "(B) the restarted ps exited $st, expected 1"
			grep -q "ps 0: restored checkpoint" "$dir/ps0C.log" || fail "(B) the restarted ps restored nothing"
			grep -q "ps 0: barrier timeout: .*missing: worker 0 (not connected since this ps restarted" "$dir/ps0C.log" \
				|| fail "(B) the restarted ps did not name worker 0 as missing"
			grep -q "ps 0: giving up: no gradient and no connection for 5 s (--timeout); waiting for: worker 0 (not connected since this ps restarted" \
				"$dir/ps0C.log" || fail "(B) the restarted ps did not say why it gave up"
			wait_exit w1B 30
			[ "$st" -eq 1 ] || fail "(B) worker 1 exited $st, expected 1"
			grep -q "Worker 1: reconnected to ps 0" "$dir/w1B.log" || fail "(B) worker 1 did not reconnect"
			grep -q "Worker 1: ps 0 did not come back within 5 s\|Worker 1: no release from ps 0 within 5 s" "$dir/w1B.log" \
				|| fail "(B) worker 1 did not say why it stopped"
			echo "  (B) ps killed after worker 0 finished, restarted: both exited 1 within $((SECONDS - t0)) s"
			grep -h "restored\|giving up\|did not come back\|no release" "$dir"/ps0C.log "$dir"/w1B.log | sed 's/^/    /'
		fi
	done
	;;
ps_restart)
	# >= 2 s of training (5 ms per step on worker 0, the barrier holds
	# worker 1 to it): the first save, 1 s in, comes well before the end.
	# (Was 4000 steps at full speed: 96 s of the TSan tier, ~24 ms a step.)
	steps=400
	# --log_every=1: check_ps_restored bounds the restored step by the last
	# one a worker printed.  With 10, a save made in the up to 9 unprinted
	# steps after it looks like a restore from the future.  (A CI run under
	# TSan failed here; its FAIL line fell outside the excerpt CI printed,
	# so that this was the cause is inferred: its workers lost 4 steps,
	# fewer than the 10 between the waited-for save and the kill.)
	f=(--train_steps="$steps" --logdir="$dir/ckpt" --save_model_secs=1 --recovery_timeout=60 --log_every=1
		--straggler_task=0 --straggler_delay_ms=5)
	start ps0 ps 0 2 ps0 "${f[@]}"
	for i in 0 1; do start w$i worker $i 2 w$i "${f[@]}"; done
	save_then_kill ps0 "the ps" 120 10
	ps_killed $steps 60
	start ps0b ps 0 2 ps0b "${f[@]}"
	wait_ok 240 w0 w1 ps0b
	check_ps_restored $steps
	grep -h "lost ps\|reconnected\|restored\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
	;;
ckpt_restore)
	# checkpoint wiring end to end, through `rdmaps launch` (no kill)
	run r1 100
	grep -q "ps 0: no checkpoint of shard 0 in $ck: starting clean" "$dir/r1.log" || fail "r1: clean start not said"
	grep -q "ps 0: saved checkpoint $ck/shard-0-step-100.ckpt" "$dir/r1.log" || fail "r1: no final checkpoint"
	run r2 150
	grep -q "ps 0: restored checkpoint $ck/shard-0-step-100.ckpt (global step 100)" "$dir/r2.log" || fail "r2: not restored"
	grep -q "global step 150, 50 updates" "$dir/r2.log" || fail "r2: expected 50 more updates to 150"
	# flip one byte inside the newest file's parameters: it is named and skipped
	printf '\377' | dd of="$ck/shard-0-step-150.ckpt" bs=1 seek=1000 conv=notrunc 2>/dev/null
	run r3 150
	grep -q "skipping $ck/shard-0-step-150.ckpt: " "$dir/r3.log" || fail "r3: corrupt checkpoint not named"
	grep -q "ps 0: restored checkpoint $ck/shard-0-step-100.ckpt (global step 100)" "$dir/r3.log" \
		|| fail "r3: the previous valid checkpoint was not used"
	grep -q "global step 150, 50 updates" "$dir/r3.log" || fail "r3: expected 50 updates to 150"
	# Checkpoints of another job configuration are neither resumed nor
	# started clean over (its saves overwrote and pruned them, and both
	# runs exited 0: a review): the launch fails, naming the file, and
	# every file stays as it was.
	sums_=$(cd "$ck" && md5sum shard-*.ckpt | sort)
	# another model (smaller: the old files are too large to be read as
	# its own; their headers say whose they are)
	timeout 300 "$bin" launch --ps=1 --workers=2 --sync_replicas --transport=tcp --data_dir="$data" \
		--log_every=50 --timeout=60 --logdir="$ck" --train_steps=20 --hidden_units=50 >"$dir/r4b.log" 2>&1 \
		&& fail "r4b: a launch of another model over the checkpoints exited 0"
	grep -q "ps 0: --logdir=$ck: its newest checkpoint of shard 0, $ck/shard-0-step-150.ckpt, is of another job configuration" \
		"$dir/r4b.log" || fail "r4b: the other model's checkpoint not named"
	[ "$(cd "$ck" && md5sum shard-*.ckpt | sort)" = "$sums_" ] || fail "the checkpoints changed under a run that refused them"
	grep -h "another job configuration" "$dir"/r4b.log | sed 's/^/  /'
	# another number of workers, async: the saved state does not depend
	# on either, so the job resumes, as TF's does, and says so (until stop
	# 34 this was refused as another configuration)
	timeout 300 "$bin" launch --ps=1 --workers=1 --transport=tcp --data_dir="$data" \
		--log_every=50 --timeout=60 --logdir="$ck" --train_steps=170 >"$dir/r4.log" 2>&1 \
		|| fail "r4: a launch with another --workers and async over the checkpoints exited non-zero"
	grep -q "ps 0: restored checkpoint $ck/shard-0-step-150.ckpt (global step 150)" "$dir/r4.log" \
		|| fail "r4: the checkpoint of 2 sync workers was not resumed by 1 async worker"
	grep -q "ps 0: that checkpoint was written by a job with another number of workers, --sync_replicas or --replicas_to_aggregate: resumed with this job's" \
		"$dir/r4.log" || fail "r4: the ps did not say the checkpoint was another configuration's"
	grep -q "global step 170, 20 updates" "$dir/r4.log" || fail "r4: expected 20 updates to 170"
	grep -q "ps 0: saved checkpoint $ck/shard-0-step-170.ckpt" "$dir/r4.log" || fail "r4: no checkpoint of step 170"
	grep -h "restored\|written by" "$dir/r4.log" | sed 's/^/  /'
	# two jobs on one logdir: the second ps refuses (exit 1), naming the
	# first one's pid, while the first runs (it waits for its workers)
	wk_="127.0.0.1:${ports[1]},127.0.0.1:${ports[3]}" # the 2 workers the checkpoints were written with
	"$bin" --job_name=ps --task_index=0 --ps_hosts="127.0.0.1:${ports[0]}" --worker_hosts="$wk_" \
		--sync_replicas --transport=tcp --logdir="$ck" --timeout=30 >"$dir/r6a.log" 2>&1 &
	pid[r6a]=$!
	end_=$((SECONDS + 20))
	until grep -q "listening on" "$dir/r6a.log"; do
		[ $SECONDS -ge $end_ ] && fail "r6a: the first ps did not start"
		sleep 0.1
	done
	"$bin" --job_name=ps --task_index=0 --ps_hosts="127.0.0.1:${ports[2]}" --worker_hosts="$wk_" \
		--sync_replicas --transport=tcp --logdir="$ck" --timeout=5 >"$dir/r6b.log" 2>&1 \
		&& fail "r6b: a second ps on the same --logdir exited 0"
	grep -q "ps 0: --logdir=$ck: shard 0's checkpoints there are in use by another running ps (pid ${pid[r6a]})" \
		"$dir/r6b.log" || fail "r6b: the refusal does not name the running ps"
	kill9 r6a
	echo "  $(grep -m1 'in use by another running ps' "$dir/r6b.log")"
	# a logdir that is a file: a clear error, non-zero exit
	: >"$dir/afile"
	"$bin" --job_name=ps --task_index=0 --ps_hosts="127.0.0.1:${ports[0]}" --worker_hosts="127.0.0.1:${ports[1]}" \
		--transport=tcp --logdir="$dir/afile" --timeout=5 >"$dir/r5.log" 2>&1 && fail "ps with --logdir=a file exited 0"
	grep -q "logdir" "$dir/r5.log" || fail "no message for --logdir=a file"
	# the newest checkpoint there but unreadable (EACCES: mode 0, the ps
	# run as uid 65534 when we are root): the ps stops naming it (exit 1),
	# and does not resume from the older one behind it (until stop 34 it
	# did, skipping the file as damaged); nothing changes
	ro_="$dir/ro"
	mkdir "$ro_" && cp "$ck"/shard-0-step-*.ckpt "$ro_"/ && chmod 0777 "$ro_" && chmod 0644 "$ro_"/*.ckpt \
		&& chmod 0 "$ro_/shard-0-step-170.ckpt" && chmod 0711 "$dir" || fail "r7: cannot set up $ro_"
	as_=
	[ "$(id -u)" -eq 0 ] && as_="setpriv --reuid=65534 --regid=65534 --clear-groups"
	# (as uid 65534: setpriv there, the binary and $ro_ reachable, the file not readable)
	if [ -z "$as_" ] || { command -v setpriv >/dev/null 2>&1 && $as_ test -x "$bin" && $as_ test -w "$ro_" &&
		! $as_ test -r "$ro_/shard-0-step-170.ckpt"; }; then
		sums_=$(cd "$ro_" && md5sum shard-*.ckpt | sort)
		$as_ "$bin" --job_name=ps --task_index=0 --ps_hosts="127.0.0.1:${ports[0]}" --worker_hosts="$wk_" \
			--sync_replicas --transport=tcp --logdir="$ro_" --timeout=5 >"$dir/r7.log" 2>&1 \
			&& fail "r7: a ps whose newest checkpoint cannot be read exited 0"
		grep -q "checkpoint: cannot read $ro_/shard-0-step-170.ckpt: Permission denied" "$dir/r7.log" \
			|| fail "r7: the unreadable checkpoint and its reason are not named"
		grep -q "ps 0: --logdir=$ro_: cannot read $ro_/shard-0-step-170.ckpt (the reason is above): not resuming" "$dir/r7.log" \
			|| fail "r7: the ps did not say why it stops"
		! grep -q "restored checkpoint" "$dir/r7.log" || fail "r7: the ps restored an older checkpoint"
		chmod 0644 "$ro_/shard-0-step-170.ckpt"
		[ "$(cd "$ro_" && md5sum shard-*.ckpt | sort)" = "$sums_" ] || fail "r7: the checkpoints changed"
		grep "cannot read" "$dir/r7.log" | sed 's/^/  /'
	else
		echo "  r7 not run: no setpriv, or uid 65534 cannot reach $bin or $ro_ (the unreadable newest checkpoint is not checked end to end; ckpt_unreadable checks the restore)"
	fi
	# a --logdir whose directories the ps creates: each new directory is
	# fsynced in its parent, so that it survives a crash with the
	# checkpoints in it (until stop 34 only the checkpoint and its own
	# directory were); seen with strace, where there is one
	if command -v strace >/dev/null 2>&1; then
		nd_="$dir/new/a"
		# (LeakSanitizer cannot run under ptrace: off for this run of an ASan build)
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			timeout 300 strace -f -y -e trace=fsync -o "$dir/r8.strace" "$bin" launch --ps=1 --workers=2 --sync_replicas \
			--transport=tcp --data_dir="$data" --timeout=60 --logdir="$nd_/b" --train_steps=5 >"$dir/r8.log" 2>&1 \
			|| fail "r8: launch under strace exited non-zero"
		for d_ in "$dir" "$dir/new" "$nd_"; do
			grep -q "fsync([0-9]*<$d_>) *= 0" "$dir/r8.strace" || fail "r8: $d_ was not fsynced after the ps created a directory in it"
		done
		grep -q "ps 0: saved checkpoint $nd_/b/shard-0-step-5.ckpt" "$dir/r8.log" || fail "r8: no checkpoint in $nd_/b"
		echo "  r8: the ps fsynced $dir, $dir/new and $nd_ after creating new/a/b in them"
	else
		echo "  r8 not run: no strace (the fsync of a created --logdir's parents is not checked)"
	fi
	grep -h "starting clean\|restored\|skipping" "$dir"/r[1-3].log | sed 's/^/  /'
	;;
*) echo "usage: kill.sh BIN DATA_DIR worker_backup|worker_rejoin|duplicate|ps_restart|ps_skew|start_skew|finished_early|ckpt_restore"; exit 2 ;;
esac
echo "PASSED: $case"
