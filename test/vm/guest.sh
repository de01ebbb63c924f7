#!/bin/bash
# Stage 2, inside the VM, chrooted into the host's read-only root: sets up
# what scripts/sandbox.sh sets up (tmpfs over every state directory), points
# the kernel's module loader at the kernel package's modules, loads the ones
# the suite needs, runs every test binary of the plan, and powers off.
#
# Results land in /mnt/vm/out (the host's work directory): <name>.log with
# the verbose test output and <name>.rc with its exit status. Lines starting
# "vm:" are echoed to the console too.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
VM=/mnt/vm
OUT=$VM/out
mkdir -p "$OUT"

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}
trap poweroff_now EXIT

say() { echo "vm: $*" | tee -a "$OUT/guest.log"; }

# The state directories of scripts/sandbox.sh. /tmp and /var/tmp stay the
# host's (read-only here), so that a checkout under them stays visible;
# temporary files go to a private TMPDIR on /run, as in the sandbox.
for d in /run /var/lib/cni /etc/cni /opt/cni /var/lib/containers /var/lib/containerd /etc/containers; do
	mount -t tmpfs -o mode=0755 tmpfs "$d" || say "warning: no tmpfs on $d"
done
mkdir -p /run/netns /run/lock
mkdir -m 1777 /run/vm-tmp
export TMPDIR=/run/vm-tmp

# Modules the kernel asks for on demand (nft expressions, xt matches,
# conntrack helpers) come from the same tree as the ones loaded here.
printf '#!/bin/sh\nexec /usr/sbin/modprobe -d %s/modules "$@"\n' /mnt >/run/vm-modprobe
chmod 0755 /run/vm-modprobe
echo /run/vm-modprobe >/proc/sys/kernel/modprobe
read -r -a mods <"$VM/modules"
if ! /run/vm-modprobe -a "${mods[@]}" 2>>"$OUT/guest.log"; then
	say "loading modules failed: ${mods[*]}"
	echo 1 >"$OUT/modules.rc"
	exit 1
fi
say "kernel $(uname -r); modules loaded: ${mods[*]}"

# Binaries run from tmpfs: executed from the uncached 9p share, every page
# of every plugin exec is a 9p read, and a CNI call costs seconds.
mkdir -p /opt/cni/bin /run/vm-tests
cp -a "$VM/bin/." /opt/cni/bin/
cp -a "$VM/tests/." /run/vm-tests/

ip link set lo up
# The disposable VM's own namespace is the sandbox (test/sandbox.Require
# checks that the tests run in the namespace named here).
CNISUITE_SANDBOX_NETNS=$(readlink /proc/self/ns/net)
export CNISUITE_SANDBOX=1 CNISUITE_SANDBOX_NETNS CNISUITE_REQUIRE_PRIVILEGED=1 CNISUITE_VM=1 CNISUITE_BIN=/opt/cni/bin
export GOPROXY=off GOFLAGS=-mod=mod

# plan: one test binary a line: name, package directory, -test.run regex.
while read -r name dir run; do
	say "run $name ($run)"
	start=$(date +%s)
	(cd "$dir" && "/run/vm-tests/$name.test" -test.v -test.count=1 -test.timeout=10m \
		-test.run "$run" >"$OUT/$name.log" 2>&1)
	rc=$?
	echo "$rc" >"$OUT/$name.rc"
	say "done $name: exit $rc in $(($(date +%s) - start)) s"
done <"$VM/plan"
say "modules loaded at the end: $(lsmod | awk 'NR > 1 {print $1}' | sort | tr '\n' ' ')"
say "all done"
