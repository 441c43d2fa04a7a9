#!/bin/sh
# /init of the SoftRoCE VM's initramfs (busybox). Loads the rxe stack, makes
# rxe0 on a dummy link with 10.77.0.1-3/24 (guest-only addresses), runs
# tier.sh and prints the marker line the host parses.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run
/bin/busybox --install -s /bin 2>/dev/null
export PATH=/usr/bin:/usr/sbin:/bin:/sbin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# no tmpfs on /tmp: the build tree may live under /tmp at its host path
ulimit -l unlimited 2>/dev/null
. /rdmaps/vm.env
mode=test
for a in $(cat /proc/cmdline); do case $a in rdmaps.mode=*) mode=${a#rdmaps.mode=};; esac; done
echo "RDMAPS-VM up: kernel $(uname -r), mode=$mode, $(grep -c ^processor /proc/cpuinfo) cpus"
result() { echo "RDMAPS-VM-RESULT rc=$1 $2"; sync; /bin/busybox poweroff -f; }
while read -r m args; do
	insmod "/lib/modules/$m" $args || { dmesg | tail -5; result 90 "reason=insmod-$m"; }
done </rdmaps/modules.order
/usr/sbin/ip link set lo up
/usr/sbin/ip link add d0 type dummy || result 91 reason=dummy
for i in 1 2 3; do /usr/sbin/ip addr add 10.77.0.$i/24 dev d0; done
/usr/sbin/ip link set d0 up
/usr/bin/rdma link add rxe0 type rxe netdev d0 || { dmesg | tail -5; result 92 reason=rdma-link-add; }
/usr/bin/rdma link show
# a host name mapped to 127.0.1.1, as Debian's installer maps a machine's own
# name (train_rdma_own_name); glibc then reads /etc/hosts only
printf '127.0.0.1 localhost\n127.0.1.1 rdmaps-vm\n' >/etc/hosts
echo 'hosts: files' >/etc/nsswitch.conf
export RDMAPS_OWN_NAME=rdmaps-vm
cd /tmp
export RDMAPS_RDMA_ADDRS=10.77.0.1,10.77.0.2,10.77.0.3
# an emulated CPU: tier.sh times OpenBLAS's kernel sets for it
export RDMAPS_IN_VM=1
sh /rdmaps/tier.sh "$mode" "$RDMAPS_BUILD" 10.77.0.1
rc=$?
result $rc "mode=$mode"
