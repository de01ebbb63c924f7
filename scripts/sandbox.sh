#!/bin/bash
# Runs a command inside a private sandbox: a fresh network namespace (so the
# machine's own interfaces, routes, rules and sysctls are never touched and
# no packet can leave) and a private mount namespace with tmpfs over every
# place a plugin or runtime writes state.
#
#   scripts/sandbox.sh go test ./...
#
# Inside, CNISUITE_SANDBOX=1 is set; privileged tests refuse to run without it.
set -euo pipefail

STATE_DIRS=(/tmp /run /var/lib/cni /etc/cni /opt/cni /var/lib/containers /var/lib/containerd /etc/containers)

if [ "${1:-}" = "--inside" ]; then
	shift
	for d in "${STATE_DIRS[@]}"; do
		mkdir -p "$d"
		mount -t tmpfs -o mode=0755 tmpfs "$d"
	done
	mkdir -p /run/netns /run/lock
	# A sysfs of this namespace, so /sys/class/net shows only our links.
	mount -t sysfs sysfs /sys
	ip link set lo up
	export CNISUITE_SANDBOX=1
	exec "$@"
fi

if [ "${CNISUITE_SANDBOX:-}" = 1 ]; then
	exec "$@"
fi
if [ "$(id -u)" != 0 ]; then
	echo "sandbox: network namespaces need root; run as root (for example: sudo make test)" >&2
	exit 1
fi
exec unshare --net --mount --propagation private -- "$0" --inside "$@"
