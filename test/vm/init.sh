#!/bin/sh
# Stage 1, the initramfs's /init (busybox sh, PID 1): loads the virtio and
# 9p modules shipped in the initramfs, mounts the host's root read-only, the
# kernel package's modules and the run's writable work directory over 9p,
# and chroots (as PID 1, so the kernel's module-loading helper sees the same
# root) into stage 2, /mnt/vm/guest.sh. Any failure powers the VM off; the
# host then finds no result file and fails the run.
export PATH=/bin

fail() {
	echo "vm-init: $*"
	echo o >/proc/sysrq-trigger
	sleep 5
	exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo 1 >/proc/sys/kernel/sysrq

# modules.order lists the initramfs modules in dependency order.
while read -r m; do
	insmod "/modules/$m" || fail "insmod $m"
done </modules/order

opts=trans=virtio,version=9p2000.L,msize=512000
R=/newroot
mkdir -p $R
mount -t 9p -o "$opts,ro,cache=loose" hostroot $R || fail "mounting the host root"
# /mnt of the host is hidden: the VM sees only what this run shares.
mount -t tmpfs -o mode=0755 tmpfs $R/mnt || fail "tmpfs on /mnt"
mkdir -p $R/mnt/modules $R/mnt/vm
mount -t 9p -o "$opts,ro,cache=loose" modules $R/mnt/modules || fail "mounting the modules"
mount -t 9p -o "$opts" work $R/mnt/vm || fail "mounting the work directory"
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
exec chroot $R /bin/bash /mnt/vm/guest.sh
