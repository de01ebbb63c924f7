#!/bin/bash
# Runs a command inside a private sandbox: a fresh network namespace (so the
# machine's own interfaces, routes, rules and sysctls are never touched and
# no packet can leave) and a private mount namespace with tmpfs over every
# place a plugin or runtime writes state.
#
#   scripts/sandbox.sh go test ./...
#
# /tmp itself is left alone, so a checkout or Go cache under /tmp stays
# visible: temporary files go to a private TMPDIR, a tmpfs mounted on a
# fresh directory under /tmp (not under /run, which tests that build a
# node of their own mount over) and removed afterwards.
# Inside, CNISUITE_SANDBOX=1 is set; privileged tests refuse to run without it.
#
#   scripts/sandbox.sh --unmarked CMD...
#
# makes the same namespaces without that mark (nor CNISUITE_SANDBOX_NETNS):
# privileged tests then skip as they do outside, while whatever a test does
# without its guard still lands in throwaway namespaces
# (scripts/machine-check.sh).
set -euo pipefail

STATE_DIRS=(/run /var/lib/cni /etc/cni /opt/cni /var/lib/containers /var/lib/containerd /etc/containers)

# refuse_hidden fails when a directory the command needs lies under a place
# the sandbox replaces with an empty tmpfs.
refuse_hidden() {
	local what=$1 path=$2 d
	[ -n "$path" ] || return 0
	path=$(readlink -m "$path")
	for d in "${STATE_DIRS[@]}"; do
		case "$path/" in
		"$d"/*)
			echo "sandbox: $what $path lies under $d, which the sandbox replaces with an empty tmpfs; move it elsewhere (anywhere else works, /tmp included)" >&2
			exit 1
			;;
		esac
	done
}

if [ "${1:-}" = "--inside" ]; then
	shift
	for d in "${STATE_DIRS[@]}"; do
		mkdir -p "$d"
		mount -t tmpfs -o mode=0755 tmpfs "$d"
	done
	mkdir -p /run/netns /run/lock
	mount -t tmpfs -o mode=1777 tmpfs "$CNISUITE_SANDBOX_TMP"
	export TMPDIR=$CNISUITE_SANDBOX_TMP
	unset CNISUITE_SANDBOX_TMP
	# A sysfs of this namespace, so /sys/class/net shows only our links.
	mount -t sysfs sysfs /sys
	ip link set lo up
	if [ -n "${CNISUITE_SANDBOX_UNMARKED:-}" ]; then
		unset CNISUITE_SANDBOX_UNMARKED CNISUITE_SANDBOX CNISUITE_SANDBOX_NETNS
		exec "$@"
	fi
	export CNISUITE_SANDBOX=1
	# Which namespace is the sandbox's: CNISUITE_SANDBOX alone proves
	# nothing, since a caller may set it by hand.
	CNISUITE_SANDBOX_NETNS=$(readlink /proc/self/ns/net)
	export CNISUITE_SANDBOX_NETNS
	exec "$@"
fi

if [ "${1:-}" = "--unmarked" ]; then
	shift
	export CNISUITE_SANDBOX_UNMARKED=1
fi
# Already inside (a test that runs the script again): run in place, but
# only in the sandbox's own network namespace.
if [ -z "${CNISUITE_SANDBOX_UNMARKED:-}" ] && [ "${CNISUITE_SANDBOX:-}" = 1 ] && [ -n "${CNISUITE_SANDBOX_NETNS:-}" ] &&
	[ "$(readlink /proc/self/ns/net)" = "$CNISUITE_SANDBOX_NETNS" ]; then
	exec "$@"
fi
if [ "$(id -u)" != 0 ]; then
	echo "sandbox: network namespaces need root; run as root (for example: sudo make test)" >&2
	exit 1
fi
refuse_hidden "the working directory" "$PWD"
refuse_hidden "the script's checkout" "$(dirname "$0")"
if command -v go >/dev/null; then
	refuse_hidden "GOCACHE" "$(go env GOCACHE)"
	refuse_hidden "GOMODCACHE" "$(go env GOMODCACHE)"
fi
CNISUITE_SANDBOX_TMP=$(mktemp -d /tmp/cnisuite-sandbox.XXXXXX)
export CNISUITE_SANDBOX_TMP
trap 'rmdir "$CNISUITE_SANDBOX_TMP"' EXIT
unshare --net --mount --propagation private -- "$0" --inside "$@"
