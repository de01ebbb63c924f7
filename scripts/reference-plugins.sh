#!/bin/bash
# Builds the CNI reference plugins (containernetworking/plugins) at the
# version interop tests switch to and from, into DIR, from the Go module
# proxy or, with GOPROXY=off, from the module cache that `make deps` fills
# by running this once. Their code is built and run as a black box, never
# imported.
#
#   scripts/reference-plugins.sh DIR
#
# REFERENCE_PLUGINS lists the plugins (paths under plugins/ of the module)
# to build instead of our five's counterparts: test/release chains
# "meta/firewall meta/bandwidth meta/sbr" after ours.
set -euo pipefail
REFERENCE_VERSION=${REFERENCE_VERSION:-v1.9.1}
dir=${1:?usage: reference-plugins.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd) # the build runs from /
mod=github.com/containernetworking/plugins/plugins
export PATH="$PATH:/usr/local/go/bin"
# With GOPROXY=off (as `make test` runs), `go install pkg@version` cannot
# even look the version up: serve it from the module cache instead, whose
# contents were checked against the checksum database when they came in.
if [ "${GOPROXY:-}" = off ]; then
	export GOPROXY="file://$(go env GOMODCACHE)/cache/download" GOSUMDB=off
fi
# Outside our module: its go.mod and -mod=mod have no say here.
cd /
plugins=${REFERENCE_PLUGINS:-main/bridge ipam/host-local meta/portmap meta/tuning main/loopback}
pkgs=()
for p in $plugins; do
	pkgs+=("$mod/$p@$REFERENCE_VERSION")
done
GOBIN=$dir GOFLAGS= CGO_ENABLED=0 go install "${pkgs[@]}"
