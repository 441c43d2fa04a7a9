#!/usr/bin/env bash
# Set up SoftRoCE (rxe) on a host that can load kernel modules (laptop, cloud
# VM, GitHub runner), the rdma-core Documentation/rxe.md way:
#   modprobe rdma_rxe; rdma link add <name> type rxe netdev <netdev>; rdma link
# Usage: ci/softroce/setup-host-rxe.sh [NETDEV]
#   NETDEV: argument, else $RDMAPS_RXE_NETDEV, else the netdev of the default
#   route, else the first UP non-loopback device with an IPv4 address.
# Idempotent: an ACTIVE RDMA device already there, or an rxe link already on
# NETDEV, is reused (nothing is added twice).
# Exit 0 when the device is ACTIVE; then the last line is
#   RXE-DEVICE name=<ibdev> netdev=<netdev> addr=<IPv4 of netdev or ->
# Non-zero with one "setup-host-rxe: cannot set up rxe: <reason>" line
# otherwise (no module support, modules disabled, no rdma_rxe for this
# kernel, not root, no netdev, link add refused, port never ACTIVE).
# ci/softroce/run falls back to the QEMU VM whenever this exits non-zero.
# RDMAPS_RXE_ROOT (tests only): prefix for /sys, /proc and /lib/modules.
set -uo pipefail
R=${RDMAPS_RXE_ROOT:-}
say() { echo "setup-host-rxe: $*"; }
fail() { say "cannot set up rxe: $*"; exit 1; }
RDMA=$(command -v rdma || true)
IP=$(command -v ip || true)
[ -n "$RDMA" ] || fail "the rdma tool is missing (apt-get install iproute2)"
[ -n "$IP" ] || fail "the ip tool is missing (apt-get install iproute2)"
command -v ibv_devinfo >/dev/null || fail "ibv_devinfo missing (apt-get install ibverbs-utils)"
err=$(mktemp) || fail "mktemp failed"
trap 'rm -f "$err"' EXIT

v4addr() { "$IP" -4 -o addr show dev "$1" 2>/dev/null | awk '{sub("/.*","",$4); print $4; exit}'; }
# "<ibdev> <netdev>" of every link that is ACTIVE, from `rdma link show`
active_links() {
	"$RDMA" link show 2>/dev/null | awk '/state ACTIVE/ {
		split($2, a, "/"); nd = "-"
		for (i = 1; i <= NF; i++) if ($i == "netdev") nd = $(i + 1)
		print a[1], nd }'
}
report() { # ibdev netdev
	local a=-
	[ "$2" != - ] && a=$(v4addr "$2")
	"$RDMA" link show 2>/dev/null | sed 's/^/  /'
	echo "RXE-DEVICE name=$1 netdev=$2 addr=${a:--}"
}

# 1. idempotent: an active device (rxe or real) is enough
if ibv_devinfo 2>/dev/null | grep PORT_ACTIVE >/dev/null; then
	# shellcheck disable=SC2046 # split "<ibdev> <netdev>" into $1 $2
	set -- $(active_links | head -1) - -
	say "an active RDMA device already exists; nothing to do"
	report "$1" "$2"
	exit 0
fi

# 2. privileges (GitHub runners: passwordless sudo)
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		exec sudo -n --preserve-env=RDMAPS_RXE_NETDEV bash "$0" "$@"
	fi
	fail "must run as root (or with passwordless sudo)"
fi

# 3. the rxe driver: built in / already loaded, or loadable
kver=$(uname -r)
if [ ! -d "$R"/sys/module/rdma_rxe ]; then
	[ -e "$R"/proc/modules ] || fail "cannot load modules on this kernel ($kver has no module support: /proc/modules missing) and rdma_rxe is not built in"
	[ "$(cat "$R"/proc/sys/kernel/modules_disabled 2>/dev/null || echo 0)" = 0 ] ||
		fail "module loading is disabled (kernel.modules_disabled=1)"
	[ -d "$R/lib/modules/$kver" ] || fail "no modules installed for kernel $kver (/lib/modules/$kver missing: a container?)"
	modinfo rdma_rxe >/dev/null 2>&1 ||
		fail "kernel $kver ships no rdma_rxe module (Ubuntu: apt-get install linux-modules-extra-$kver)"
	# crc32_generic: soft dependency; without it rdma_rxe fails with
	# "failed to init crc32 algorithm err:-2" on some kernels
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe 2>"$err" || {
		m=$(cat "$err")
		case $m in *"not permitted"*) m="$m (no CAP_SYS_MODULE: a container?)";; esac
		fail "modprobe rdma_rxe: $m"
	}
fi
# librdmacm needs /dev/infiniband/rdma_cm (rdma_ucm), libibverbs ib_uverbs
for m in ib_uverbs rdma_ucm; do
	[ -d "$R/sys/module/$m" ] || modprobe "$m" 2>"$err" || fail "modprobe $m: $(cat "$err")"
done

# 4. the netdev
nd=${1:-${RDMAPS_RXE_NETDEV:-}}
if [ -z "$nd" ]; then
	nd=$("$IP" -o route show default 2>/dev/null | awk '{for(i=1;i<=NF;i++) if($i=="dev") {print $(i+1); exit}}')
fi
if [ -z "$nd" ]; then
	nd=$("$IP" -4 -o addr show up 2>/dev/null | awk '$2 != "lo" {print $2; exit}')
fi
[ -n "$nd" ] || fail "no netdev given and none found (no default route, no UP device with IPv4); pass one: $0 eth0"
"$IP" link show "$nd" >/dev/null 2>&1 || fail "no netdev $nd"
"$IP" link set "$nd" up 2>"$err" || fail "ip link set $nd up: $(cat "$err")"

# 5. the rxe link (reuse one already on this netdev)
name=$("$RDMA" link show 2>/dev/null | awk -v nd="$nd" '{for(i=1;i<=NF;i++) if($i=="netdev" && $(i+1)==nd) {split($2,a,"/"); print a[1]; exit}}')
if [ -n "$name" ]; then
	say "reusing $name on $nd"
else
	name=rxe0
	[ -e "$R"/sys/class/infiniband/rxe0 ] && name="rxe_$nd"
	if ! "$RDMA" link add "$name" type rxe netdev "$nd" 2>"$err"; then
		# iproute2 without `rdma link add` (e.g. CentOS 7): the module's sysfs knob
		if [ -w "$R"/sys/module/rdma_rxe/parameters/add ] && grep -qiE 'usage|unknown|not supported' "$err"; then
			echo "$nd" >"$R"/sys/module/rdma_rxe/parameters/add ||
				fail "echo $nd > /sys/module/rdma_rxe/parameters/add failed"
			name=$("$RDMA" link show 2>/dev/null | awk -v nd="$nd" '{for(i=1;i<=NF;i++) if($i=="netdev" && $(i+1)==nd) {split($2,a,"/"); print a[1]; exit}}')
			[ -n "$name" ] || name=rxe0
		else
			fail "rdma link add $name type rxe netdev $nd: $(cat "$err")"
		fi
	fi
fi

# 6. wait for the port
for _ in $(seq 1 10); do
	if ibv_devinfo -d "$name" 2>/dev/null | grep PORT_ACTIVE >/dev/null; then
		say "$name on $nd is ACTIVE"
		report "$name" "$nd"
		exit 0
	fi
	sleep 1
done
fail "$name on $nd created but its port is not PORT_ACTIVE after 10 s (is $nd up with a carrier?)"
