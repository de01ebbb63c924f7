#!/bin/bash
# Installs, idempotently, what building and testing the suite needs: the
# system tools the plugins and tests call, the Go modules, and staticcheck.
set -euo pipefail
cd "$(dirname "$0")/.."

# firewalld (and the dbus-daemon it needs) runs only inside the sandbox,
# on a private bus (test/firewalld); without systemd its package starts
# nothing on the machine. procps: sysctl --system, run by test/resync and
# pkg/sysctlkeep only in a private mount namespace over the test's files.
# strace: test/execs traces which programs a chain's calls start.
PACKAGES=(iproute2 iptables nftables conntrack iputils-ping socat util-linux curl time ethtool firewalld dbus procps strace)

scripts/install-packages.sh install-deps "${PACKAGES[@]}"

export PATH="$PATH:/usr/local/go/bin"
GOFLAGS=-mod=mod go mod download
# The reference plugins the switch tests (test/e2e) move to and from: built
# once here so that the tests, run with GOPROXY=off, find their modules in
# the cache.
ref=$(mktemp -d)
scripts/reference-plugins.sh "$ref" && echo "install-deps: reference plugins' modules cached"
REFERENCE_PLUGINS="meta/firewall meta/bandwidth meta/sbr meta/vrf" scripts/reference-plugins.sh "$ref" &&
	echo "install-deps: the reference plugins test/release chains after ours cached"
rm -rf "$ref"
if ! [ -x "$(go env GOPATH)/bin/staticcheck" ]; then
	echo "install-deps: installing staticcheck"
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
# Debian's containernetworking-plugins, which test/release installs our
# package beside in throwaway dpkg roots (test/release/debroot): fetched
# here because the tests run without network, and kept where the sandbox
# does not hide it.
debs=/var/cache/cnisuite/debs
if ! compgen -G "$debs/containernetworking-plugins_*.deb" >/dev/null; then
	echo "install-deps: downloading containernetworking-plugins into $debs"
	mkdir -p "$debs"
	download() { (cd "$debs" && apt-get -q -o DPkg::Lock::Timeout=300 download containernetworking-plugins); }
	download || { apt-get -q -o DPkg::Lock::Timeout=300 update && download; }
fi
