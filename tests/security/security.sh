#!/bin/sh
# End-to-end security tests against a real ps (`rdmaps --job_name=ps`) and
# real workers, started by hand on free ports (POSIX sh: also runs under
# busybox inside the SoftRoCE VM).
# usage: security.sh RDMAPS_BIN ROGUE_BIN TRANSPORT DATA_DIR CASE [HOSTILE_BIN]
#   CASE rogue: 1 ps (auth token), honest workers 0 and 1, and rogue_worker
#        holding worker indices 2..4 with the right token and layout: its
#        writes to the parameters, past its slot and into another worker's
#        slot must each fail with a remote access error, and the honest
#        workers must finish the job (ps summary, both validation lines).
#   CASE auth: a ps with --auth_token_file; a worker with a wrong token and
#        one with no token are refused at connection time (the worker says
#        "authentication refused" and exits non-zero, the ps logs the refusal)
#        and the job then completes with the right worker; bad token files
#        are flag errors (exit 2, a message).
#   CASE stall, ring (HOSTILE_BIN = hostile_peer; stall also over rdma: a
#        half rdma_cm set-up, limits 14 s and 4 s): 1 ps (--timeout=10,
#        auth token), honest workers 0 and 1 training, hostile_peer's observer
#        as worker 3 timing the parameter version; then as worker 2:
#        stall: a half handshake (hellos, then silence): the ps must close it
#          within 4.5 s, and the version must not stand still for 1 s (the
#          ps completes set-ups without waiting on them: rt_accept_poll;
#          until 2026-12-06 it held its serve loop for the 2 s set-up bound
#          and the version stood still for 1.23-1.91 s);
#        ring: a peer that pushes but never reads its mailbox socket: the
#          version must not stand still for 5 s, and the ps drops it.
#          Since stop 27 the ps no longer flushes a full queue for up to
#          3 s on its serving thread (0.00 s on the host, 0.15-0.30 s
#          under TSan by hand), but the tsan tier of b47f469's CI still
#          measured 2.78 s, not explained: the limit stays 5 s.  The
#          lines printed say where a stall sits (hostile_peer's +T clock,
#          its longest READ; the ps's "serve loop did not come round").
#        dup: a connection as worker 2 that answers nothing, then an honest
#          one for index 2: the ps replaces the first after its liveness
#          check (LIVE_CHECK_S) and the version must not stand still for 1 s
#          (until stop 27 the check held the serve loop up to 3 s).
#        Then worker 2 connects honestly and must be accepted (rejoin).
#        The ps must still be serving afterwards (it has not given up).
#   CASE flood (tcp): 64 idle plain connections (no bytes, no token) held
#        before and while honest workers 0 and 1 connect: the job must
#        complete (the ps gives up after --timeout=10 if they are locked out).
# Address: 127.0.0.1 for tcp; RDMAPS_RDMA_ADDR (default 127.0.0.1) for rdma.
# Exit 0 pass, 1 fail, 77 skipped (no MNIST, or no RDMA device).
bin=$1; rogue=$2; tr=$3; data=$4; case=$5; hostile=${6:-}
# the stall and dup cases' bound on the longest version stall: 1 s, and
# 2 s for a sanitizer build (ASan, TSan: 3-10x slower, and its tier runs
# two tests at once), still under the 2.96 s the dup case's bug stood
# still (until stop 33: 1 s for every build; a review: the ring case saw
# 2.78 s once under TSan)
stall_lim=1
grep -q '__[at]san_init' "$bin" 2>/dev/null && stall_lim=2
t=${TMPDIR:-/tmp}/rdmaps-sec-$$-$case
mkdir -p "$t" || exit 1
addr=127.0.0.1
[ "$tr" = rdma ] && addr=${RDMAPS_RDMA_ADDR:-127.0.0.1}
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$t"; }
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$t"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f"):"; tail -25 "$f"; }; done
	exit 1
}

if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
	echo "SKIPPED: no MNIST in $data (run scripts/fetch-data.sh)"; exit 77
fi
printf 'correct-horse-battery\n' >"$t/token"
printf 'wrong-horse-battery\n' >"$t/bad-token"
: >"$t/empty-token"

# Background processes run under a time limit.  GNU timeout, when killed,
# forwards the signal and then SIGCONT to its whole process group; under
# ASan that SIGCONT can land while LeakSanitizer's exit-time tracer is
# stopping the threads and cancel its SIGSTOP, and the tracer then waits
# forever (seen as a 400 s ctest timeout of security_tcp_auth, 1 run in
# ~20).  --foreground sends no SIGCONT.  Busybox timeout (in the VM) has
# no --foreground and needs none: there $! is the program itself.
if timeout --foreground 5 true 2>/dev/null; then tmo="timeout --foreground"; else tmo=timeout; fi

# stop PID: SIGTERM and wait at most 30 s for it to exit.
stop() {
	kill "$1" 2>/dev/null
	n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	kill -0 "$1" 2>/dev/null && { kill -9 "$1" 2>/dev/null; fail "pid $1 did not exit within 30 s of SIGTERM"; }
	wait "$1" 2>/dev/null
}

# start_ps W STEPS [none]: start the ps on a free port (with the token, or
# none); sets ps, hosts, pids.
start_ps() {
	W=$1; STEPS=$2
	pstok="--auth_token_file=$t/token"
	[ "${3:-}" = none ] && pstok="" 
	for try in 1 2 3; do
		port=$("$rogue" --free-port) || fail "no free port"
		ps="$addr:$port"
		hosts=""
		i=0
		while [ $i -lt "$W" ]; do hosts="$hosts${hosts:+,}$addr:$((20000 + i))"; i=$((i + 1)); done
		common="--ps_hosts=$ps --worker_hosts=$hosts --transport=$tr --train_steps=$STEPS --log_every=10 --timeout=${TMO:-60}"
		# shellcheck disable=SC2086
		$tmo 300 "$bin" --job_name=ps --task_index=0 $common $pstok ${PSFLAGS:-} >"$t/ps.log" 2>&1 &
		pspid=$!
		pids="$pids $pspid"
		# listening, or failed (no device / port taken)?
		n=0
		while [ $n -lt 100 ]; do
			grep -q "listening on" "$t/ps.log" && break
			kill -0 "$pspid" 2>/dev/null || break
			sleep 0.1; n=$((n + 1))
		done
		if grep -q "no active RDMA device\|built without the verbs" "$t/ps.log"; then
			echo "SKIPPED: no RDMA device"; exit 77
		fi
		sleep 0.3
		kill -0 "$pspid" 2>/dev/null && return 0
		grep -q "cannot listen" "$t/ps.log" || fail "the ps exited at start"
	done
	fail "the ps could not listen on 3 free ports"
}

# worker I TOKENARGS LOG: start honest worker I in the background
worker() {
	# shellcheck disable=SC2086
	$tmo 300 "$bin" --job_name=worker --task_index="$1" $common --data_dir="$data" $2 >"$t/$3" 2>&1 &
	eval "wpid_$1=\$!"
	pids="$pids $!"
}

waitfor() { # PID NAME: wait, fail on non-zero exit
	wait "$1"; rc=$?
	[ $rc -eq 0 ] || fail "$2 exited $rc"
}

case $case in
rogue)
	start_ps 5 30
	worker 0 "--auth_token_file=$t/token" w0.log
	worker 1 "--auth_token_file=$t/token" w1.log
	timeout 300 "$rogue" "$tr" "$ps" 5 2 "$t/token" >"$t/rogue.log" 2>&1
	rrc=$?
	cat "$t/rogue.log" | grep '^ROGUE'
	[ $rrc -eq 77 ] && { echo "SKIPPED: rogue_worker: no RDMA device"; exit 77; }
	[ $rrc -eq 0 ] || fail "rogue_worker exited $rrc"
	[ "$(grep -c 'ROGUE A[0-9].*: refused: remote access error' "$t/rogue.log")" -eq 3 ] \
		|| fail "expected 3 attacks refused with a remote access error"
	waitfor "$wpid_0" "honest worker 0"
	waitfor "$wpid_1" "honest worker 1"
	waitfor "$pspid" "ps"
	grep -q "validation cross entropy" "$t/w0.log" || fail "worker 0 did not finish training"
	grep -q "validation cross entropy" "$t/w1.log" || fail "worker 1 did not finish training"
	grep -q "ps 0: done after .*global step 3[0-9], " "$t/ps.log" || fail "ps summary: expected ~30 global steps"
	grep "ps 0: done" "$t/ps.log"
	;;
auth)
	# bad token files: flag errors
	for f in /nonexistent/token "$t/empty-token"; do
		"$bin" --job_name=ps --task_index=0 --ps_hosts=$addr:1 --worker_hosts=$addr:2 \
			--auth_token_file="$f" >"$t/flag.log" 2>&1
		rc=$?
		[ $rc -eq 2 ] || fail "--auth_token_file=$f: exit $rc, expected 2"
		grep -q "auth_token_file" "$t/flag.log" || fail "--auth_token_file=$f: no message"
		echo "  --auth_token_file=$f: $(cat "$t/flag.log")"
	done
	start_ps 2 20
	worker 0 "--auth_token_file=$t/token" w0.log
	for bad in wrong none; do
		if [ $bad = wrong ]; then ta="--auth_token_file=$t/bad-token"; else ta=""; fi
		# shellcheck disable=SC2086
		timeout 120 "$bin" --job_name=worker --task_index=1 $common --data_dir="$data" $ta >"$t/bad-$bad.log" 2>&1
		rc=$?
		[ $rc -ne 0 ] || fail "a worker with token '$bad' exited 0"
		[ $rc -ne 124 ] || fail "a worker with token '$bad' hung (timeout)"
		grep -q "authentication refused" "$t/bad-$bad.log" || fail "worker with token '$bad': no 'authentication refused' message"
		echo "  worker 1, token $bad: exit $rc: $(grep 'authentication refused' "$t/bad-$bad.log" | head -1)"
	done
	n=$(grep -c "auth token" "$t/ps.log")
	[ "$n" -ge 2 ] || fail "the ps logged $n refused auth tokens, expected 2"
	grep "auth token" "$t/ps.log" | head -2 | sed 's/^/  ps: /'
	worker 1 "--auth_token_file=$t/token" w1.log
	waitfor "$wpid_0" "worker 0"
	waitfor "$wpid_1" "worker 1"
	waitfor "$pspid" "ps"
	grep -q "ps 0: done after .*global step 2[0-9], " "$t/ps.log" || fail "ps summary: expected ~20 global steps"
	grep "ps 0: done" "$t/ps.log"
	# A ps WITHOUT a token refuses a worker that presents one, on both
	# transports alike (equal tokens or none: docs/failure-modes.md).
	mv "$t/ps.log" "$t/ps-token.log"
	start_ps 1 5 none
	timeout 120 "$bin" --job_name=worker --task_index=0 $common --data_dir="$data" \
		--auth_token_file="$t/token" >"$t/unexpected.log" 2>&1
	rc=$?
	[ $rc -ne 0 ] || fail "a worker with a token was accepted by a ps without one"
	[ $rc -ne 124 ] || fail "a worker with a token hung against a ps without one (timeout)"
	grep -q "authentication refused" "$t/unexpected.log" || fail "worker with an unexpected token: no 'authentication refused' message"
	echo "  ps without a token, worker 0 with one: exit $rc: $(grep 'authentication refused' "$t/unexpected.log" | head -1)"
	grep -q "auth token, but this side has none" "$t/ps.log" || fail "the tokenless ps did not log the refused token"
	grep "auth token, but this side has none" "$t/ps.log" | head -1 | sed 's/^/  ps: /'
	stop "$pspid"
	;;
stall|ring|dup)
	# 4 worker slots: 0 and 1 honest, 2 the attacker, 3 the observer.  ring:
	# a progress thread serves the attacker's pushes at once, so its 255
	# unanswered releases pile up within a second (in caller mode they come
	# as fast only while the ps idles, and then the idle probe may drop it
	# first: 70 pushes in 3.4 s, measured)
	pf=""
	[ "$case" = ring ] && pf=--ps_progress=thread
	PSFLAGS=$pf TMO=10 start_ps 4 1000000
	worker 0 "--auth_token_file=$t/token" w0.log
	worker 1 "--auth_token_file=$t/token" w1.log
	hcase=$case
	[ "$tr" = rdma ] && hcase=${case}_rdma
	$tmo 90 "$hostile" "$hcase" "$ps" 4 2 3 "$t/token" >"$t/hostile.log" 2>&1
	hrc=$?
	grep '^HOSTILE' "$t/hostile.log"
	# a gap the ps itself saw (stopped, no CPU, a blocking call): says
	# where a long stall came from
	grep "serve loop did not come round" "$t/ps.log" | sed 's/^/  /'
	gap=$(sed -n 's/^HOSTILE observer: .*longest stall \([0-9.]*\) s$/\1/p' "$t/hostile.log")
	[ -n "$gap" ] || gap=999 # the observer's READ failed: the ps stopped serving
	if [ "$case" = stall ]; then
		held=$(sed -n 's/^HOSTILE stall: ps closed it after \([0-9.]*\) s$/\1/p' "$t/hostile.log")
		[ -n "$held" ] || fail "the ps never closed the half-open connection"
		# tcp: the set-up bound is 2 s; verbs: 10 s (the ps's --timeout
		# here), and the VM's emulated CPU makes every gap longer
		hlim=4.5; glim=$stall_lim
		[ "$tr" = rdma ] && { hlim=14; glim=4; }
		echo "  the ps closed the half set-up after $held s (limit $hlim s); longest version stall $gap s (limit $glim s)"
		awk "BEGIN{exit !($held < $hlim)}" || fail "the ps held the half handshake for $held s (limit $hlim s)"
		awk "BEGIN{exit !($gap < $glim)}" || fail "training stood still for $gap s during the attack (limit $glim s)"
	elif [ "$case" = dup ]; then
		glim=$stall_lim
		echo "  $(grep 'then an honest connection' "$t/hostile.log"); longest version stall $gap s (limit $glim s)"
		awk "BEGIN{exit !($gap < $glim)}" || fail "training stood still for $gap s during the attack (limit $glim s)"
		# replaced by poll_dup, or dropped first by the idle probe (its
		# WRITE may predate the newcomer: seen under TSan), then rejoined
		for _ in $(seq 50); do grep -q "worker 2 rejoined" "$t/ps.log" && break; sleep 0.1; done
		grep -q "worker 2 connected again; its previous connection is dead\|lost worker 2 (no answer" "$t/ps.log" &&
			grep -q "worker 2 rejoined" "$t/ps.log" ||
			fail "the ps did not replace the connection that answers nothing"
		grep "worker 2 connected again\|lost worker 2 (no answer" "$t/ps.log" | head -1 | sed 's/^/  /'
	else
		echo "  longest version stall $gap s (limit 5 s)"
		awk "BEGIN{exit !($gap < 5)}" || fail "training stood still for $gap s during the attack (limit 5 s)"
		grep -q "lost worker 2" "$t/ps.log" || fail "the ps did not drop the peer that never reads"
		grep "lost worker 2" "$t/ps.log"
		# the ps completes a set-up at its next listener poll (every
		# 20 ms; later under TSan): the line may come after the client's
		# "accepted"
		for _ in $(seq 50); do grep -q "worker 2 rejoined" "$t/ps.log" && break; sleep 0.1; done
		grep -q "worker 2 rejoined" "$t/ps.log" || fail "worker 2 could not rejoin after the drop"
	fi
	[ $hrc -eq 0 ] || fail "hostile_peer exited $hrc"
	sleep 1
	kill -0 "$pspid" 2>/dev/null || fail "the ps exited during the attack"
	grep -q "giving up" "$t/ps.log" && fail "the ps gave up"
	stop "$wpid_0"; stop "$wpid_1"; stop "$pspid"
	;;
flood)
	TMO=10 start_ps 2 100
	$tmo 60 "$hostile" flood "$ps" 64 40 >"$t/hostile.log" 2>&1 &
	hpid=$!
	pids="$pids $hpid"
	sleep 1
	worker 0 "--auth_token_file=$t/token" w0.log
	worker 1 "--auth_token_file=$t/token" w1.log
	waitfor "$wpid_0" "honest worker 0"
	waitfor "$wpid_1" "honest worker 1"
	waitfor "$pspid" "ps"
	kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
	grep '^HOSTILE' "$t/hostile.log"
	# the table was full: the workers got in because the ps evicted idle ones
	grep -q "without a complete hello pair: closing the oldest" "$t/ps.log" || fail "the ps never found its table full"
	grep "without a complete hello pair" "$t/ps.log"
	grep -q "ps 0: done after .*global step 1[0-9][0-9], " "$t/ps.log" || fail "ps summary: expected ~100 global steps"
	grep "ps 0: done" "$t/ps.log"
	;;
*) echo "usage: security.sh BIN ROGUE TRANSPORT DATA_DIR rogue|auth|stall|ring|dup|flood [HOSTILE]"; exit 2 ;;
esac
echo "PASSED: $case over $tr"
