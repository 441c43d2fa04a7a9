# shellcheck shell=sh
# Helpers shared by kill.sh (bash, tcp tier) and kill_posix.sh (POSIX sh,
# busybox in the SoftRoCE VM): sourced by both, so POSIX sh only.
# The sourcing script sets $dir (its scratch folder; the tasks' logs are
# $dir/NAME.log) and defines wait_exit NAME SECS (waits for the task NAME to
# end, fails the test after SECS s, leaves its exit status in $st) and
# kill9 NAME (SIGKILLs the task NAME).
# Knobs: fail_tail (lines of each log shown on failure, default 30),
# poll (seconds between two looks at a log, default 0.1).
# This file must stay executable: ci/softroce/run copies the executables
# of the build tree into the VM.
# shellcheck disable=SC2154 # $dir and $st: set by the sourcing script

fail() {
	echo "FAIL: $*"
	for f in "$dir"/*.log; do
		[ -e "$f" ] && { echo "--- $(basename "$f") (last ${fail_tail:-30} lines)"; tail -"${fail_tail:-30}" "$f"; }
	done
	# once more last: a CI excerpt shows only the tail of a failed test
	echo "FAIL: $*"
	exit 1
}
now() { date +%s; }

# wait_for FILE REGEX SECS [FROM]: until a line of FILE (from line FROM on,
# default 1) matches the extended regex; 1 if none did within SECS s
wait_for() {
	end_=$(($(now) + $3))
	until tail -n +"${4:-1}" "$1" 2>/dev/null | grep -Eq "$2"; do
		[ "$(now)" -ge $end_ ] && return 1
		sleep "${poll:-0.1}"
	done
	return 0
}
# last global step a worker printed (-1 if none)
last_step() {
	s_=$(sed -n 's/.*(global step: \([0-9]*\)).*/\1/p' "$1" 2>/dev/null | tail -1)
	echo "${s_:--1}"
}
# wait_step FILE MIN SECS: until the worker printed a global step >= MIN;
# 1 if it did not within SECS s
wait_step() {
	end_=$(($(now) + $3))
	until [ "$(last_step "$1")" -ge "$2" ]; do
		[ "$(now)" -ge $end_ ] && return 1
		sleep "${poll:-0.1}"
	done
	return 0
}
# the global step of the last checkpoint a ps log says it saved (empty if none)
saved_step() {
	sed -n 's/.*saved checkpoint .*(global step \([0-9]*\)).*/\1/p' "$1" | tail -1
}
# the global step of the checkpoint a restarted ps log says it restored
restored_step() {
	sed -n 's/.*restored checkpoint .*(global step \([0-9]*\)).*/\1/p' "$1"
}
# save_then_wait PS WHO SECS MORE: waits (up to SECS s each) for the ps task
# PS to save a checkpoint past global step 0 (WHO: how a failure names it),
# then for worker 0 to print MORE steps past it; $saved: that checkpoint's
# global step
save_then_wait() {
	wait_for "$dir/$1.log" "saved checkpoint .*\(global step [1-9][0-9]*\)" "$3" \
		|| fail "$2 saved no checkpoint within $3 s"
	saved=$(saved_step "$dir/$1.log")
	wait_step "$dir/w0.log" $((saved + $4)) "$3" || fail "training did not go on after the save"
}
# save_then_kill PS WHO SECS MORE: save_then_wait, then kills PS with the
# sourcing script's kill9 NAME
save_then_kill() {
	save_then_wait "$@"
	kill9 "$1"
}
# wait_ok SECS NAME...: each task ends within SECS s, with exit status 0
wait_ok() {
	secs_=$1; shift
	for t_ in "$@"; do
		wait_exit "$t_" "$secs_"
		[ "$st" -eq 0 ] || fail "$t_ exited $st"
	done
}

# check_backup_done STEPS: after worker 2 was killed in a sync job of 3
# workers (ps log ps0.log, workers w0, w1): the ps named the lost worker,
# the job reached STEPS and workers 0 and 1 finished
check_backup_done() {
	grep -q "ps 0: lost worker 2" "$dir/ps0.log" || fail "the ps did not notice worker 2 was gone"
	grep -q "ps 0: worker 2 left without finishing" "$dir/ps0.log" || fail "the ps did not report worker 2 as unfinished"
	grep -q "global step $1, " "$dir/ps0.log" || fail "final global step is not $1"
	for i_ in 0 1; do grep -q "validation cross entropy" "$dir/w$i_.log" || fail "worker $i_ did not finish"; done
}

# ps_killed STEPS SECS: the ps ps0 (log ps0.log) was just killed under
# workers w0 and w1, which print every step (--log_every=1): sets $saved
# (its last checkpoint's global step) and $reached (the highest global step
# a worker printed), says both, and fails unless the kill came before STEPS.
# $reached is read once both workers said they lost the ps (within SECS s):
# a worker prints a step after its push, so a push the ps took just before
# it died (and may have applied and saved) is printed by then.
ps_killed() {
	# what was saved before the kill (the ps is dead: no more lines)
	saved=$(saved_step "$dir/ps0.log")
	for i_ in 0 1; do
		wait_for "$dir/w$i_.log" "Worker $i_: lost ps 0" "$2" || fail "worker $i_ did not report the lost ps"
	done
	reached=$(last_step "$dir/w0.log"); g1_=$(last_step "$dir/w1.log")
	[ "$g1_" -gt "$reached" ] && reached=$g1_
	echo "  killed the ps (SIGKILL) at global step >= $reached; its last checkpoint: global step $saved"
	[ "$reached" -lt "$1" ] || fail "the ps was killed after the end"
}

# check_ps_restored STEPS: after ps_killed STEPS, the restarted ps (log
# ps0b.log) and the workers w0, w1 have ended: the ps restored a checkpoint
# no older than $saved and no newer than $reached + 1, both workers
# reconnected and finished, and the job reached STEPS.  (+1: a worker prints
# global step G once it pulled version G; the sync ps may have applied the
# update of the gradients pushed at G, and saved G + 1, before the kill and
# before any worker pulled it: seen once in the VM, reached 4, saved 5.)
check_ps_restored() {
	restored=$(restored_step "$dir/ps0b.log")
	[ -n "$restored" ] || fail "the restarted ps restored no checkpoint"
	[ "$restored" -ge "$saved" ] || fail "restored global step $restored, but $saved was saved before the kill"
	[ "$restored" -le $((reached + 1)) ] ||
		fail "restored global step $restored is beyond the $reached reached (+ 1 applied, not yet pulled)"
	lost=$((reached - restored))
	[ "$lost" -ge 0 ] || lost=0
	echo "  restored global step $restored; steps lost: $lost (all made after the last checkpoint)"
	check_reconnected_finished
	grep -q "global step $1, " "$dir/ps0b.log" || fail "final global step is not $1"
}
# workers w0 and w1 both reported reconnecting to ps 0 and finished
check_reconnected_finished() {
	for i_ in 0 1; do
		grep -q "Worker $i_: reconnected to ps 0" "$dir/w$i_.log" || fail "worker $i_ did not report reconnecting"
		grep -q "validation cross entropy" "$dir/w$i_.log" || fail "worker $i_ did not finish"
	done
}

# The worker_rejoin case of both kill scripts (ps0, w0, w1 are the logs of
# the ps and the two workers, R = W = 2, --barrier_timeout=2).
nlines() { wc -l <"$1" | tr -d ' '; }
# rejoin_killed STEPS: call right after worker 1 was SIGKILLed.  Its last
# global step must be before STEPS; then the ps and worker 0 must name
# worker 1 (alone) after the barrier timeout, in lines printed after the kill.
rejoin_killed() {
	from_ps_=$(($(nlines "$dir/ps0.log") + 1)); from_w0_=$(($(nlines "$dir/w0.log") + 1))
	killed_at_=$(last_step "$dir/w1.log")
	echo "  killed worker 1 (SIGKILL) at global step $killed_at_"
	[ "$killed_at_" -lt "$1" ] || fail "worker 1 was killed after the end"
	wait_for "$dir/ps0.log" "ps 0: barrier timeout: .*missing: worker 1( |$)" 60 "$from_ps_" \
		|| fail "the ps did not name worker 1 (alone) after --barrier_timeout"
	wait_for "$dir/w0.log" "Worker 0: barrier timeout: .*missing: worker 1$" 60 "$from_w0_" \
		|| fail "worker 0 did not name worker 1 (alone) after --barrier_timeout"
	tail -n +"$from_ps_" "$dir/ps0.log" | grep -m1 "barrier timeout" | sed 's/^/  /'
	tail -n +"$from_w0_" "$dir/w0.log" | grep -m1 "barrier timeout" | sed 's/^/  /'
}
# check_rejoined STEPS NAME: after the job ended (all exit 0), with NAME the
# restarted worker 1: the ps saw it rejoin and the worker said so, the job reached STEPS, both
# workers printed their validation cross entropy.
check_rejoined() {
	grep -q "ps 0: worker 1 rejoined" "$dir/ps0.log" || fail "the ps did not report worker 1 rejoining"
	# ... and the worker says so too (a new job on the ports of an earlier
	# one whose ps still waits would otherwise go on with its step silently)
	grep -q "^Worker 1: ps 0 at .* already took [0-9]* gradient(s) from a worker 1 before this one: rejoining the job it holds" \
		"$dir/$2.log" || fail "the restarted worker 1 did not say that it rejoins a job in progress"
	grep -q "global step $1, " "$dir/ps0.log" || fail "final global step is not $1"
	for l_ in w0 "$2"; do grep -q "validation cross entropy" "$dir/$l_.log" || fail "$l_ did not finish"; done
	first_=$(sed -n 's/.*(global step: \([0-9]*\)).*/\1/p' "$dir/$2.log" | head -1)
	echo "  the restarted worker 1 began at global step ${first_:-?}"
	grep -h "rejoined\|done after\|validation cross entropy" "$dir"/*.log | sed 's/^/  /'
}
