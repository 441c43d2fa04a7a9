#!/bin/bash
# Multi-host tests over TCP: each "host" is a Linux network namespace with
# an address of its own on a shared bridge and an /etc/hosts of its own
# (`ip netns exec NS` bind-mounts /etc/netns/NS/hosts over /etc/hosts), and
# the job is started by hand as a TensorFlow user starts it: the SAME
# command line on every host, only --job_name / --task_index differ.
# Every other test runs all tasks on 127.0.0.1 of one host.
#
# The cluster: 4 namespaces, one a switch (a bridge, br0) and three hosts,
# rdmaps-ps0-<id> (.1), rdmaps-w0-<id> (.2), rdmaps-w1-<id> (.3) in
# 10.213.R.0/24, each host joined to the bridge by a veth pair (eth0 in the
# host).  Nothing is created in the caller's namespace; every namespace and
# /etc/netns/<ns> directory is removed on exit, failure or signal.
#
# usage: multihost.sh RDMAPS_BIN DATA_DIR CASE
#   loopback_name  each host's /etc/hosts maps its OWN name to 127.0.1.1
#                  (as Debian's installer writes it) and the others' names to
#                  their 10.x addresses; the cluster is given by host names.
#                  A TF ps listens on every address, so the job must train.
#                  (Fails on code whose ps binds the address its own name
#                  resolves to: the workers get "connection refused".)
#   own_addr       the same, each host's own name mapped to its 10.x address
#   ps_ip          as loopback_name, but --ps_hosts gives the ps by its 10.x
#                  address (the workers still by name)
#   both_addrs     each host's own name on
#                  127.0.1.1 AND on its 10.x address (Debian's line kept, a
#                  line for the real address added): getaddrinfo returns
#                  127.0.1.1 first, and a ps that binds the first address
#                  of its name is unreachable, as in loopback_name (failed
#                  until the ps looked at its name's first address, not at
#                  all of them: 2026-12-06)
# Each case runs the job twice: --transport=tcp, then --transport=auto
# (no RDMA device here: auto must take tcp, and the ps must say so).
# 1 ps + 2 workers, sync, 50 steps: every task exits 0, both workers print
# their validation cross entropy and the ps its "done after" line.
# Exit 0 pass, 1 fail, 77 skipped (no data; no root / CAP_NET_ADMIN / ip).
#
# By hand (reviews of multi-host failures): in a bash script run as root,
# `MH_LIB=1 . multihost.sh BIN DATA` defines the harness (mh_up, mh_hosts,
# mh_task, ...; ${ns[ps0]}, ${name[w1]}, ${addr[w0]}, $ns_sw: the switch,
# whose port p<k> joins host k) without running a case; its EXIT trap
# (mh_down) removes everything.
set -u
bin=$1; data=$2; case=${3:-}

skip() { echo "SKIPPED: $*"; exit 77; }

# ------------------------------------------------------------- harness
# names unique per run (ctest -j runs several scripts at once): the pid,
# and a random part in case a pid is reused while a namespace of a killed
# run is still around
tag=$$r$((RANDOM % 100))
pfx=rmh$tag
ns_sw=$pfx-sw
hosts_=(ps0 w0 w1)           # the hosts, in address order (.1, .2, .3)
declare -A ns name addr pid  # per host: namespace, host name, address; per task: pid
net=10.213.$((RANDOM % 200))
for k in 0 1 2; do
	h=${hosts_[$k]}
	ns[$h]=$pfx-$h
	name[$h]=rdmaps-$h-$tag
	addr[$h]=$net.$((k + 1))
done
made=()                      # namespaces created (mh_down removes them)
dir=

mh_down() {
	local p n
	for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	pid=()
	for n in "${made[@]}"; do
		ip netns del "$n" 2>/dev/null
		rm -rf "/etc/netns/$n"
	done
	made=()
	# /etc/netns itself, if no other run uses it (mh_hosts retries a write
	# that this rmdir raced with)
	rmdir /etc/netns 2>/dev/null
	[ -n "$dir" ] && rm -rf "$dir"
	dir=
}

# mh_sweep: the namespaces (and /etc/netns dirs) of earlier runs whose
# script is gone: a run killed with SIGKILL (a ctest timeout) ran no trap
mh_sweep() {
	local n p
	for n in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E '^rmh[0-9]+r[0-9]+-'); do
		p=${n#rmh}; p=${p%%r*}
		kill -0 "$p" 2>/dev/null && continue
		ip netns del "$n" 2>/dev/null
		rm -rf "/etc/netns/$n"
	done
	for n in "${TMPDIR:-/tmp}"/rdmaps-mh-*r*-*; do
		[ -d "$n" ] || continue
		p=${n##*/rdmaps-mh-}; p=${p%%r*}
		kill -0 "$p" 2>/dev/null || rm -rf "$n"
	done
}

# mh_up: the switch and the three hosts; 77 if namespaces cannot be made
mh_up() {
	local k h
	command -v ip >/dev/null || skip "no ip(8) (iproute2)"
	mh_sweep
	ip netns add "$ns_sw" 2>/dev/null || skip "cannot create network namespaces (needs root / CAP_NET_ADMIN)"
	made+=("$ns_sw")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmaps-mh-$tag-XXXXXX")
	ip -n "$ns_sw" link add br0 type bridge || fail "cannot create a bridge in $ns_sw"
	ip -n "$ns_sw" link set br0 up || fail "cannot set br0 up"
	for k in 0 1 2; do
		h=${hosts_[$k]}
		ip netns add "${ns[$h]}" || fail "cannot create namespace ${ns[$h]}"
		made+=("${ns[$h]}")
		ip -n "${ns[$h]}" link set lo up || fail "lo up in ${ns[$h]}"
		# both ends created inside the namespaces: no name in ours
		ip link add eth0 netns "${ns[$h]}" type veth peer name "p$k" netns "$ns_sw" \
			|| fail "cannot create the veth pair of $h"
		ip -n "$ns_sw" link set "p$k" master br0 up || fail "cannot attach p$k to br0"
		ip -n "${ns[$h]}" addr add "${addr[$h]}/24" dev eth0 || fail "cannot address eth0 of $h"
		ip -n "${ns[$h]}" link set eth0 up || fail "cannot set eth0 of $h up"
	done
	mh_reach
}

# mh_reach: every host reaches every other one's address (a closed port
# answers "Connection refused" at once; no route or a dead link: a timeout)
mh_reach() {
	local a b out
	for a in "${hosts_[@]}"; do
		for b in "${hosts_[@]}"; do
			[ "$a" = "$b" ] && continue
			out=$(ip netns exec "${ns[$a]}" timeout 5 bash -c "exec 3<>/dev/tcp/${addr[$b]}/9" 2>&1)
			case $out in
			*"Connection refused"*) ;;
			*) fail "the test network is broken: $a cannot reach $b (${addr[$b]}): ${out:-timeout}" ;;
			esac
		done
	done
}

# mh_hosts MODE: each host's /etc/hosts.  MODE loopback: its own name on
# 127.0.1.1 (Debian's installer: "127.0.1.1 <fqdn> <hostname>"); own: its
# own name on its 10.x address; both: on both, 127.0.1.1 first.  The other
# hosts by their 10.x address.
mh_hosts() {
	local h f
	for h in "${hosts_[@]}"; do
		f=/etc/netns/${ns[$h]}/hosts
		for _ in 1 2 3; do
			mkdir -p "/etc/netns/${ns[$h]}" && mh_hosts_of "$h" "$1" 2>/dev/null >"$f" && break
		done
		[ -s "$f" ] || fail "cannot write $f"
	done
}
# mh_hosts_of HOST MODE: that host's /etc/hosts on stdout
mh_hosts_of() {
	local h=$1 o
	echo "127.0.0.1	localhost"
	for o in "${hosts_[@]}"; do
		if [ "$o" = "$h" ] && [ "$2" = loopback ]; then
			echo "127.0.1.1	${name[$o]}.example.org	${name[$o]}"
		elif [ "$o" = "$h" ] && [ "$2" = both ]; then
			echo "127.0.1.1	${name[$o]}.example.org	${name[$o]}"
			echo "${addr[$o]}	${name[$o]}.example.org	${name[$o]}"
		else
			echo "${addr[$o]}	${name[$o]}.example.org	${name[$o]}"
		fi
	done
	printf '\n# The following lines are desirable for IPv6 capable hosts\n'
	echo "::1     localhost ip6-localhost ip6-loopback"
	echo "ff02::1 ip6-allnodes"
	echo "ff02::2 ip6-allrouters"
}

# mh_task KEY HOST ARGS...: runs rdmaps ARGS on HOST (its namespace, its
# /etc/hosts) in the background, output in $dir/KEY.log, pid in pid[KEY]
mh_task() {
	local key=$1 h=$2; shift 2
	ip netns exec "${ns[$h]}" "$bin" "$@" >"$dir/$key.log" 2>&1 &
	pid[$key]=$!
}

# mh_wait_exit KEY SECS: the task's exit status in $st (fails after SECS s)
mh_wait_exit() {
	local end=$((SECONDS + $2)) p=${pid[$1]}
	while kill -0 "$p" 2>/dev/null; do
		[ $SECONDS -ge $end ] && fail "$1 still running after $2 s"
		sleep 0.1
	done
	wait "$p"; st=$?
	unset "pid[$1]"
}

# mh_wait_for FILE REGEX SECS [KEY]: until FILE has a line matching REGEX
# (1 after SECS s, or at once when task KEY has exited)
mh_wait_for() {
	local end=$((SECONDS + $3))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -ge $end ] && return 1
		[ -n "${4:-}" ] && ! kill -0 "${pid[$4]}" 2>/dev/null && { grep -Eq "$2" "$1" 2>/dev/null; return; }
		sleep 0.1
	done
}

# what each host listens on, and the logs: the failure's context
mh_diag() {
	local h f
	for h in "${hosts_[@]}"; do
		echo "--- ${ns[$h]} ($h, ${addr[$h]}): /etc/hosts maps ${name[$h]} to" \
			"$(ip netns exec "${ns[$h]}" getent ahostsv4 "${name[$h]}" 2>/dev/null | awk 'NR == 1 { print $1 }')"
	done
	[ -s "$dir/ps0.listen" ] && awk '{ print "--- the ps listened on " $4 " (ss -ltn on its host, once it said \"listening on\")" }' "$dir/ps0.listen"
	for f in "$dir"/*.log; do
		[ -e "$f" ] && { echo "--- $(basename "$f") (last 20 lines)"; tail -20 "$f"; }
	done
}

fail() {
	echo "FAIL: $*"
	[ -n "$dir" ] && mh_diag
	echo "FAIL: $*" # once more last: a CI excerpt shows only the tail
	exit 1
}

trap mh_down EXIT
trap 'exit 1' INT TERM HUP

[ "${MH_LIB:-0}" = 1 ] && return 0 2>/dev/null

# ------------------------------------------------------------- the cases
[ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ] \
	|| skip "no MNIST in $data (run scripts/fetch-data.sh)"
[ "$(id -u)" -eq 0 ] || skip "not root: network namespaces need CAP_NET_ADMIN"

port=2222 # TF's: every host has its own port space here
# job TRANSPORT PS_HOSTS: 1 ps + 2 workers, the same flags on every task
job() {
	local tr=$1 psh=$2 wkh="${name[w0]}:$port,${name[w1]}:$port" k t
	local f=(--ps_hosts="$psh" --worker_hosts="$wkh" --sync_replicas=True --train_steps=50 --log_every=25
		--transport="$tr" --data_dir="$data" --timeout=15 --recovery_timeout=15)
	rm -f "$dir"/*.log
	echo "  --transport=$tr --ps_hosts=$psh --worker_hosts=$wkh"
	mh_task ps0 ps0 --job_name=ps --task_index=0 "${f[@]}"
	mh_wait_for "$dir/ps0.log" "transport [a-z]+, listening on" 20 ps0 || fail "the ps did not listen ($tr)"
	# the sockets it listens on (mh_diag shows them: the ps may be gone by then)
	ip netns exec "${ns[ps0]}" ss -ltnH >"$dir/ps0.listen" 2>&1
	for k in 0 1; do mh_task "w$k" "w$k" --job_name=worker --task_index="$k" "${f[@]}"; done
	for t in w0 w1 ps0; do
		mh_wait_exit "$t" 60
		if [ "$st" -ne 0 ]; then
			# the known cause, named: a ps listening on loopback only
			[ -s "$dir/ps0.listen" ] && grep -q "connection refused" "$dir/$t.log" && awk '$4 !~ /^127\./ { o = 1 } END { exit o }' "$dir/ps0.listen" \
				&& fail "$t exited $st ($tr, --ps_hosts=$psh): connection refused, and the ps listens on a loopback" \
				"address only ($(awk '{ printf "%s%s", s, $4; s = " " }' "$dir/ps0.listen")): the address its own name has in its" \
				"/etc/hosts; a TensorFlow ps listens on every address"
			fail "$t exited $st ($tr, --ps_hosts=$psh)"
		fi
	done
	for k in 0 1; do
		grep -q "validation cross entropy = " "$dir/w$k.log" \
			|| fail "worker $k printed no validation cross entropy ($tr)"
	done
	grep -q "ps 0: done after .* global step 50, " "$dir/ps0.log" || fail "the ps did not print its done line at global step 50 ($tr)"
	if [ "$tr" = auto ]; then
		grep -q "ps 0: transport tcp, listening on .* (auto: no RDMA port serves" "$dir/ps0.log" \
			|| fail "--transport=auto: the ps did not say it took tcp"
		# what auto picks on each worker host for its own name (exit 1: tcp)
		for k in 0 1; do
			ip netns exec "${ns[w$k]}" "$bin" devices "${name[w$k]}" >"$dir/devices-w$k.log" 2>&1; t=$?
			[ "$t" -eq 1 ] || fail "rdmaps devices ${name[w$k]} on w$k exited $t, expected 1 (tcp)"
		done
	fi
	grep -h "listening on\|validation cross entropy\|done after" "$dir"/ps0.log "$dir"/w0.log "$dir"/w1.log | sed 's/^/    /'
}

t0=$SECONDS
mh_up
case $case in
loopback_name) mh_hosts loopback; psh="${name[ps0]}:$port" ;;
own_addr) mh_hosts own; psh="${name[ps0]}:$port" ;;
ps_ip) mh_hosts loopback; psh="${addr[ps0]}:$port" ;;
both_addrs) mh_hosts both; psh="${name[ps0]}:$port" ;;
*) fail "unknown case '$case'" ;;
esac
echo "  cluster: ps0 ${name[ps0]} ${addr[ps0]}, w0 ${name[w0]} ${addr[w0]}, w1 ${name[w1]} ${addr[w1]} ($case /etc/hosts)"
job tcp "$psh"
job auto "$psh"
echo "PASS: $case ($((SECONDS - t0)) s)"
