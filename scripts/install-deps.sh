#!/bin/bash
# Installs, idempotently, what building and testing the suite needs: the
# system tools the plugins and tests call, the Go modules, and staticcheck.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(iproute2 iptables nftables conntrack iputils-ping socat util-linux curl)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export PATH="$PATH:/usr/local/go/bin"
GOFLAGS=-mod=mod go mod download
# The reference plugins the interop tests switch to and from (test/interop):
# built once here so that the tests, run with GOPROXY=off, find their
# modules in the cache.
scripts/reference-plugins.sh "$(mktemp -d)" && echo "install-deps: reference plugins' modules cached"
if ! [ -x "$(go env GOPATH)/bin/staticcheck" ]; then
	echo "install-deps: installing staticcheck"
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
