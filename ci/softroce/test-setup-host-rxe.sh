#!/usr/bin/env bash
# Tests of setup-host-rxe.sh's decisions against fake rdma/ip/ibv_devinfo/
# modprobe/modinfo/id/uname/sudo and a fake /sys,/proc,/lib/modules root
# (RDMAPS_RXE_ROOT): this project's machines cannot load modules, so the real
# thing only runs on a host that can.  Prints one line per case, exits 1 if
# any case failed.   Usage: bash ci/softroce/test-setup-host-rxe.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
F=$T/bin S=$T/state R=$T/root
mkdir -p "$F"

fake() { printf '#!/usr/bin/env bash\nS=%s R=%s\n%s\n' "$S" "$R" "$2" >"$F/$1"; chmod +x "$F/$1"; }
fake rdma '
echo "rdma $*" >>$S/calls
if [ "$1 $2" = "link show" ]; then cat $S/links 2>/dev/null; exit 0; fi
if [ "$1 $2" = "link add" ]; then
	[ -f $S/linkadd_fail ] && { cat $S/linkadd_fail >&2; exit 1; }
	echo "link $3/1 state ACTIVE physical_state LINK_UP netdev $7" >>$S/links
	mkdir -p $R/sys/class/infiniband/$3; exit 0
fi
exit 1'
fake ibv_devinfo '
if [ "${1:-}" = -d ]; then
	{ [ -f $S/port_active ] || grep -q "link $2/1 state ACTIVE" $S/links 2>/dev/null; } &&
		echo "	state: PORT_ACTIVE (4)"
	exit 0
fi
grep -q "state ACTIVE" $S/links 2>/dev/null && echo "	state: PORT_ACTIVE (4)"; exit 0'
fake ip '
echo "ip $*" >>$S/calls
case "$*" in
"-o route show default") cat $S/route 2>/dev/null;;
"-4 -o addr show dev "*) d=${@: -1}; [ -f $S/nd_$d ] && echo "2: $d    inet $(cat $S/nd_$d)/24 brd x scope global $d";;
"-4 -o addr show up") for f in $S/nd_*; do [ -f "$f" ] && { d=${f##*/nd_}; echo "2: $d    inet $(cat $f)/24"; }; done;;
"link show "*) [ -f $S/nd_${3} ];;
"link set "*) exit 0;;
*) exit 1;;
esac'
fake modprobe '
echo "modprobe $*" >>$S/calls
[ -f $S/modprobe_fail ] && [ "$1" = rdma_rxe ] && { cat $S/modprobe_fail >&2; exit 1; }
mkdir -p $R/sys/module/$1'
fake modinfo '[ -f $S/has_rxe ]'
fake id 'cat $S/uid 2>/dev/null || echo 0'
fake uname 'echo 6.1.0-test'
fake sudo 'exit 1'

reset() {
	rm -rf "$S" "$R"; mkdir -p "$S" "$R/sys/module" "$R/proc/sys/kernel" "$R/lib/modules/6.1.0-test"
	echo 0 >"$R/proc/sys/kernel/modules_disabled"; : >"$R/proc/modules"; touch "$S/has_rxe"
	echo "default via 10.9.8.1 dev eth0" >"$S/route"; echo 10.9.8.7 >"$S/nd_eth0"
}
run() { PATH=$F:$PATH RDMAPS_RXE_ROOT=$R bash "$here/setup-host-rxe.sh" "$@" >"$T/out" 2>&1; echo $? >"$T/rc"; }
fails=0
check() { # name, expected rc, grep pattern for output, [pattern that must NOT be in calls]
	local rc; rc=$(cat "$T/rc")
	if [ "$rc" != "$2" ] || ! grep -qE -- "$3" "$T/out" ||
		{ [ -n "${4:-}" ] && grep -qE -- "$4" "$S/calls" 2>/dev/null; }; then
		echo "FAIL $1 (rc=$rc, want $2; want output /$3/${4:+, no call /$4/})"; sed 's/^/    /' "$T/out"; fails=$((fails + 1))
	else
		echo "ok   $1"
	fi
}

reset; rm "$R/proc/modules"; run
check "no module support, not built in" 1 "cannot load modules on this kernel .*no module support"
reset; rm "$R/proc/modules"; mkdir -p "$R/sys/module/rdma_rxe"; run
check "built-in rxe, picks the default-route netdev" 0 "^RXE-DEVICE name=rxe0 netdev=eth0 addr=10.9.8.7$" "modprobe rdma_rxe"
run
check "second run is idempotent" 0 "^RXE-DEVICE name=rxe0 netdev=eth0 addr=10.9.8.7$" "link add .*link add"
[ "$(grep -c 'rdma link add' "$S/calls")" = 1 ] || { echo "FAIL idempotent: rdma link add ran twice"; fails=$((fails + 1)); }
reset; run
check "loads crc32_generic, rdma_rxe, ib_uverbs, rdma_ucm" 0 "^RXE-DEVICE name=rxe0 netdev=eth0"
grep -q "modprobe crc32_generic" "$S/calls" && grep -q "modprobe rdma_rxe" "$S/calls" &&
	grep -q "modprobe rdma_ucm" "$S/calls" || { echo "FAIL modprobe calls: $(tr '\n' ';' <"$S/calls")"; fails=$((fails + 1)); }
reset; echo 1 >"$R/proc/sys/kernel/modules_disabled"; run
check "modules disabled" 1 "module loading is disabled"
reset; rmdir "$R/lib/modules/6.1.0-test"; run
check "no /lib/modules for the kernel" 1 "no modules installed for kernel 6.1.0-test"
reset; rm "$S/has_rxe"; run
check "kernel without rdma_rxe" 1 "ships no rdma_rxe module .*linux-modules-extra-6.1.0-test"
reset; echo "modprobe: ERROR: could not insert 'rdma_rxe': Operation not permitted" >"$S/modprobe_fail"; run
check "modprobe EPERM" 1 "modprobe rdma_rxe: .*Operation not permitted.*CAP_SYS_MODULE"
reset; echo 1000 >"$S/uid"; run
check "not root, no sudo" 1 "must run as root"
reset; run nosuch
check "named netdev missing" 1 "no netdev nosuch"
reset; echo 10.1.1.1 >"$S/nd_ens4"; RDMAPS_RXE_NETDEV=ens4 run
check "RDMAPS_RXE_NETDEV chooses" 0 "^RXE-DEVICE name=rxe0 netdev=ens4 addr=10.1.1.1$"
reset; : >"$S/route"; rm "$S/nd_eth0"; echo 10.2.2.2 >"$S/nd_enp1"; run
check "no default route: first UP device with IPv4" 0 "^RXE-DEVICE name=rxe0 netdev=enp1 addr=10.2.2.2$"
reset; : >"$S/route"; rm "$S/nd_eth0"; run
check "no netdev at all" 1 "no netdev given and none found"
reset; echo "error: Operation not supported" >"$S/linkadd_fail"; run
check "rdma link add refused" 1 "rdma link add rxe0 type rxe netdev eth0: error: Operation not supported"
reset; echo "link rxe_eth0/1 state DOWN physical_state DISABLED netdev eth0" >"$S/links"; touch "$S/port_active"; run
check "existing rxe link on the netdev is reused" 0 "reusing rxe_eth0 on eth0" "link add"
reset; mkdir -p "$R/sys/class/infiniband/rxe0"; run
check "rxe0 taken: rxe_<netdev>" 0 "^RXE-DEVICE name=rxe_eth0 netdev=eth0"

echo "setup-host-rxe tests: $((16 - fails)) ok, $fails failed"
[ $fails = 0 ]
