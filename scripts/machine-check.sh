#!/bin/bash
# Runs a test command as root the way `make unit` allows — privileged tests
# skip, since no sandbox mark is set — but inside throwaway namespaces
# (scripts/sandbox.sh --unmarked), and fails when the run changed anything
# a test must only change inside its sandbox: any readable sysctl (the
# namespace's net.* and the machine's global ones), a link, address, route,
# policy rule, nftables or iptables-legacy rule, a named network namespace,
# or a file under the state directories. A test that writes before its
# sandbox guard, or "restores" a constant instead of the value it read, is
# caught here: the namespace starts with bridge-nf-call-ip{,6}tables off,
# the opposite of a fresh namespace's default.
#
#   scripts/machine-check.sh go test -count=1 ./...
set -euo pipefail

STATE_DIRS=(/run /var/lib/cni /etc/cni /opt/cni /var/lib/containers /var/lib/containerd /etc/containers)

# What changes by itself: counters and save dates, and the sysctls the
# kernel keeps as statistics or makes up on every read.
VOLATILE='\[[0-9]+:[0-9]+\]|counter packets [0-9]+ bytes [0-9]+|_timer +[0-9.]+'
VOLATILE_SYSCTL='^/proc/sys/(fs/(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota/)|kernel/(random/|ns_last_pid|pty/nr|perf_event_max_sample_rate|tainted|hung_task_detect_count)|net/netfilter/nf_conntrack_count|vm/stat_refresh)'

snapshot() {
	local cmd
	for cmd in "ip -d -o link show" "ip -o addr show" "ip route show table all" "ip -6 route show table all" \
		"ip rule" "ip -6 rule" "nft list ruleset" "iptables-legacy-save" "ip6tables-legacy-save"; do
		echo "## $cmd"
		$cmd 2>&1 | grep -v '^# \(Generated\|Completed\)' | sed -E "s/$VOLATILE//g" || true
	done
	echo "## named network namespaces"
	ls -A /run/netns 2>/dev/null || true
	echo "## state directories"
	find "${STATE_DIRS[@]}" -path /run/netns -prune -o -printf '%p %M %s\n' 2>/dev/null | sort || true
	echo "## sysctls"
	find /proc/sys -type f -perm -u=r -exec grep -H '' {} + 2>/dev/null | grep -Ev "$VOLATILE_SYSCTL" | sort || true
}

if [ "${1:-}" = "--inside" ]; then
	shift
	sysctl -qw net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0
	work=$(mktemp -d)
	snapshot > "$work/before"
	rc=0
	env -u CNISUITE_REQUIRE_PRIVILEGED "$@" || rc=$?
	snapshot > "$work/after"
	if ! diff -u "$work/before" "$work/after" > "$work/diff"; then
		echo "machine-check: the run changed what only a sandboxed test may change (- before, + after):" >&2
		cat "$work/diff" >&2
		rc=1
	else
		echo "machine-check: no sysctl, link, address, route, rule, namespace or state file changed"
	fi
	rm -rf "$work"
	exit "$rc"
fi
exec "$(dirname "$0")/sandbox.sh" --unmarked "$0" --inside "$@"
