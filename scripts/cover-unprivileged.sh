#!/bin/bash
# Prints each package's test coverage as a user without any privilege
# sees it: the test binaries are built here (as whoever runs this), then
# run as nobody (uid 65534, no groups, no capabilities), so every test
# that needs root skips as it does in `make unit` on a developer's laptop.
# (nobody does not own the checkout: no VCS stamp in what tests build.)
#
#   scripts/cover-unprivileged.sh ./pkg/netfilter/... ./pkg/firewall/... ./pkg/link/...
set -euo pipefail
[ $# -gt 0 ] || set -- ./...
GO=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -m 755 "$work/modcache"
mkdir -m 777 "$work/gocache"
failed=
for pkg in $($GO list "$@"); do
	dir=$($GO list -f '{{.Dir}}' "$pkg")
	name=$(echo "$pkg" | tr / _)
	if [ -z "$($GO list -f '{{join .TestGoFiles ""}}{{join .XTestGoFiles ""}}' "$pkg")" ]; then
		printf '%-50s no test files\n' "$pkg"
		continue
	fi
	$GO test -c -cover -covermode=set -coverpkg="$pkg" -o "$work/$name.test" "$pkg"
	mkdir -m 777 "$work/$name.d"
	# nobody cannot read the module cache under /root: a private mount
	# namespace lends it a readable path, for tests that build plugins.
	out=$(cd "$dir" && unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' _ \
		"$($GO env GOMODCACHE)" "$work/modcache" \
		setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		env -i PATH="$(dirname "$(command -v "$GO")"):/usr/sbin:/usr/bin:/sbin:/bin" \
		HOME="$work/$name.d" TMPDIR="$work/$name.d" GOCACHE="$work/gocache" GOMODCACHE="$work/modcache" \
		GOFLAGS="-mod=mod -buildvcs=false" GOPROXY=off \
		"$work/$name.test" -test.count=1 -test.coverprofile="$work/$name.d/cover.out" 2>&1) || {
		echo "$out" | grep -E -- '^\s*(--- FAIL|\S+\.go:[0-9]+:|sandbox: |go: |error)' | head -10 || true
		failed="$failed $pkg"
	}
	printf '%-50s %s\n' "$pkg" "$(echo "$out" | grep -o 'coverage: .*' | tail -1)"
done
if [ -n "$failed" ]; then
	echo "FAIL (as nobody):$failed"
	exit 1
fi
