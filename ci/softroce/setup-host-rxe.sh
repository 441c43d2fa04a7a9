#!/usr/bin/env bash
# On a host that can load kernel modules (laptop, cloud VM, GitHub runner):
# load rdma_rxe and create rxe0 on a netdev, then verify with ibv_devinfo.
# Usage: ci/softroce/setup-host-rxe.sh [NETDEV]   (default: lo)
# Exit 0 when an rxe device is ACTIVE; non-zero with the reason otherwise.
set -uo pipefail
nd=${1:-${RDMAPS_RXE_NETDEV:-lo}}
say() { echo "setup-host-rxe: $*"; }
fail() { say "cannot set up rxe: $*"; exit 1; }
IP=/usr/sbin/ip; RDMA=/usr/bin/rdma
[ -x $RDMA ] || fail "$RDMA missing (apt-get install iproute2)"
command -v ibv_devinfo >/dev/null || fail "ibv_devinfo missing (apt-get install ibverbs-utils)"
[ "$(id -u)" = 0 ] || fail "must run as root"

if ibv_devinfo 2>/dev/null | grep -q PORT_ACTIVE; then
	say "an active RDMA device already exists"; ibv_devices; exit 0
fi
if [ ! -e /proc/modules ]; then
	fail "cannot load modules on this kernel ($(uname -r) has no module support)"
fi
if ! grep -qw rdma_rxe /proc/modules; then
	# crc32_generic: a soft dependency only; without it rdma_rxe cannot init crc32
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe 2>/tmp/rxe-modprobe.err || fail "modprobe rdma_rxe: $(cat /tmp/rxe-modprobe.err)"
fi
modprobe rdma_ucm 2>/dev/null || say "warning: rdma_ucm not loaded (librdmacm needs it)"
$IP link show "$nd" >/dev/null 2>&1 || fail "no netdev $nd"
$IP link set "$nd" up
if ! $RDMA link show 2>/dev/null | grep -q "netdev $nd\b"; then
	$RDMA link add rxe0 type rxe netdev "$nd" 2>/tmp/rxe-link.err \
		|| fail "rdma link add rxe0 type rxe netdev $nd: $(cat /tmp/rxe-link.err)"
fi
$RDMA link show
ibv_devices
for _ in 1 2 3 4 5; do
	ibv_devinfo 2>/dev/null | grep -q PORT_ACTIVE && { say "rxe0 on $nd is ACTIVE"; exit 0; }
	sleep 1
done
fail "rxe device created but no port is PORT_ACTIVE (ibv_devinfo)"
