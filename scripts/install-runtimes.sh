#!/bin/bash
# Builds, idempotently, the container runtimes Kubernetes nodes run today
# that the end-to-end tests drive our plugins with, from the Go module proxy:
# containerd 2.x (with its runc shim and ctr), CRI-O (with pinns),
# cri-tools' critest, for rootless containerd RootlessKit and nerdctl (with
# its containerd-rootless.sh), and for test/k8s etcd and Kubernetes' node
# programs, at the versions of runtime-versions.env. Each
# lands in $CNISUITE_RUNTIMES/<name>-<version>/ (by default
# /var/cache/cnisuite/runtimes, outside every directory scripts/sandbox.sh
# hides), with a STAMP file written last: a directory with a STAMP is a
# finished build and is kept, so CI machines build each version once.
# `make deps` runs this (through install-e2e-deps.sh); the tests run with
# GOPROXY=off and no network, and find the binaries there.
#
#   scripts/install-runtimes.sh            # all of them
#   scripts/install-runtimes.sh containerd # one of containerd, crio, critest, rootlesskit, nerdctl, etcd, k8s
#   scripts/install-runtimes.sh versions   # what the tests will run (make e2e)
set -euo pipefail

# shellcheck source=runtime-versions.env
. "$(dirname "$0")/runtime-versions.env"
CACHE=${CNISUITE_RUNTIMES:-/var/cache/cnisuite/runtimes}
# Builds share the machine: they run at low priority.
NICE=${NICE:-nice -n 15}
CRIO_TAGS="containers_image_ostree_stub containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper btrfs_noversion"

export PATH="$PATH:/usr/local/go/bin"
export CGO_ENABLED=0 GOFLAGS=
mkdir -p "$CACHE"

# fresh NAME VERSION BINARY...: true when NAME-VERSION still has to be
# built (no STAMP, or a binary missing); clears what an interrupted build
# left behind.
fresh() {
	local dir=$CACHE/$1-$2 name=$1 version=$2 b built=yes
	shift 2
	for b in "$@"; do
		[ -x "$dir/bin/$b" ] || built=
	done
	if [ -f "$dir/STAMP" ] && [ -n "$built" ]; then
		echo "install-runtimes: $name $version cached in $dir"
		return 1
	fi
	set -- "$name" "$version"
	rm -rf "$dir"
	mkdir -p "$dir/bin"
	echo "install-runtimes: building $1 $2 into $dir"
}

# stamp NAME VERSION START: marks the build finished, with what it took.
stamp() {
	local dir=$CACHE/$1-$2
	printf 'name=%s\nversion=%s\ngo=%s\nbuilt=%s\nseconds=%s\n' "$1" "$2" \
		"$(go env GOVERSION)" "$(date -u +%FT%TZ)" "$(($(date +%s) - $3))" > "$dir/STAMP"
	echo "install-runtimes: $1 $2 built in $(($(date +%s) - $3)) s"
}

containerd() {
	fresh containerd "$CONTAINERD_VERSION" containerd containerd-shim-runc-v2 ctr || return 0
	local start dir=$CACHE/containerd-$CONTAINERD_VERSION
	start=$(date +%s)
	(cd / && GOBIN=$dir/bin $NICE go install \
		"github.com/containerd/containerd/v2/cmd/containerd@v$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/ctr@v$CONTAINERD_VERSION")
	stamp containerd "$CONTAINERD_VERSION" "$start"
}

# module_copy MODULE VERSION: downloads a module at an exact version and
# prints the path of a writable copy of it, to build in with -mod=mod
# (resolving its requirements as they are; module zips carry no vendor/).
module_copy() {
	local src work
	src=$(cd / && go mod download -json "$1@v$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || { echo "install-runtimes: no module directory for $1 v$2" >&2; return 1; }
	work=$(mktemp -d)
	cp -r "$src/." "$work"
	chmod -R u+w "$work"
	echo "$work"
}

# CRI-O's module cannot be installed with `go install` (the proxy does not
# list its versions), but it can be downloaded at an exact version.
crio() {
	fresh crio "$CRIO_VERSION" crio pinns || return 0
	local start work dir=$CACHE/crio-$CRIO_VERSION
	start=$(date +%s)
	work=$(module_copy github.com/cri-o/cri-o "$CRIO_VERSION")
	(cd "$work" && $NICE go build -mod=mod -trimpath -tags "$CRIO_TAGS" -ldflags "-s -w" \
		-o "$dir/bin/crio" ./cmd/crio)
	$NICE make -s -C "$work/pinns" >/dev/null
	install -m 0755 "$work/bin/pinns" "$dir/bin/pinns"
	rm -rf "$work"
	stamp crio "$CRIO_VERSION" "$start"
}

# critest is a compiled test binary (its specs are _test.go files): `go
# install` finds nothing to install, `go test -c` builds it.
critest() {
	fresh critest "$CRITEST_VERSION" critest || return 0
	local start work dir=$CACHE/critest-$CRITEST_VERSION
	start=$(date +%s)
	work=$(module_copy sigs.k8s.io/cri-tools "$CRITEST_VERSION")
	(cd "$work" && $NICE go test -c -mod=mod -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRITEST_VERSION" \
		-o "$dir/bin/critest" ./cmd/critest)
	rm -rf "$work"
	stamp critest "$CRITEST_VERSION" "$start"
}

rootlesskit() {
	fresh rootlesskit "$ROOTLESSKIT_VERSION" rootlesskit || return 0
	local start dir=$CACHE/rootlesskit-$ROOTLESSKIT_VERSION
	start=$(date +%s)
	(cd / && GOBIN=$dir/bin $NICE go install \
		"github.com/rootless-containers/rootlesskit/v2/cmd/rootlesskit@v$ROOTLESSKIT_VERSION")
	stamp rootlesskit "$ROOTLESSKIT_VERSION" "$start"
}

# nerdctl cannot be installed with `go install` (the proxy does not list
# its versions); its containerd-rootless.sh comes from the same module.
nerdctl() {
	fresh nerdctl "$NERDCTL_VERSION" nerdctl containerd-rootless.sh || return 0
	local start work dir=$CACHE/nerdctl-$NERDCTL_VERSION
	start=$(date +%s)
	work=$(module_copy github.com/containerd/nerdctl "$NERDCTL_VERSION")
	(cd "$work" && $NICE go build -mod=mod -trimpath -ldflags "-s -w" -o "$dir/bin/nerdctl" ./cmd/nerdctl)
	install -m 0755 "$work/extras/rootless/containerd-rootless.sh" "$dir/bin/containerd-rootless.sh"
	rm -rf "$work"
	stamp nerdctl "$NERDCTL_VERSION" "$start"
}

# etcd builds the etcd test/k8s's API server stores in. Neither it nor
# k8s below can be built with `go install`: etcd's server points its
# sibling modules (go.etcd.io/etcd/api/v3, ...) at ../ with replace
# directives, and k8s.io/kubernetes its staging modules (k8s.io/api,
# k8s.io/client-go, ...) at ./staging. So each is built from a throwaway
# module in its cache directory, whose go.mod requires the program's module
# and carries those replaces with versions of the proxy.
etcd() {
	fresh etcd "$ETCD_VERSION" etcd || return 0
	local start dir=$CACHE/etcd-$ETCD_VERSION
	start=$(date +%s)
	replacing_module "$dir/build" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/ "v$ETCD_VERSION"
	# The module's root package is etcd's main.
	(cd "$dir/build" && $NICE go build -mod=mod -trimpath -ldflags "-s -w" -o "$dir/bin/etcd" go.etcd.io/etcd/server/v3)
	rm -rf "$dir/build"
	stamp etcd "$ETCD_VERSION" "$start"
}

# k8s builds the node's Kubernetes programs test/k8s runs: kube-apiserver,
# kube-controller-manager, kube-proxy, the kubelet and kubectl, with their
# staging modules at v0.<minor>.<patch>.
k8s() {
	local bins=(kube-apiserver kube-controller-manager kube-proxy kubelet kubectl)
	fresh k8s "$K8S_VERSION" "${bins[@]}" || return 0
	local start dir=$CACHE/k8s-$K8S_VERSION v=k8s.io/component-base/version pkgs=() b
	start=$(date +%s)
	replacing_module "$dir/build" k8s.io/kubernetes "$K8S_VERSION" k8s.io/ "v0.${K8S_VERSION#*.}"
	for b in "${bins[@]}"; do
		pkgs+=("k8s.io/kubernetes/cmd/$b")
	done
	(cd "$dir/build" && $NICE go build -mod=mod -trimpath -o "$dir/bin/" \
		-ldflags "-s -w -X $v.gitVersion=v$K8S_VERSION -X $v.gitMajor=${K8S_VERSION%%.*} -X $v.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean" \
		"${pkgs[@]}")
	rm -rf "$dir/build"
	stamp k8s "$K8S_VERSION" "$start"
}

# replacing_module DIR MODULE VERSION PREFIX REPLACE_VERSION: writes a module in
# DIR that requires MODULE at VERSION, with every one of MODULE's replace
# directives onto a local path below PREFIX (its staging or sibling
# modules) pointed at that module's REPLACE_VERSION on the proxy instead.
replacing_module() {
	local dir=$1 mod=$2 version=$3 prefix=$4 rv=$5 gomod
	gomod=$(cd / && go mod download -json "$mod@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[ -f "$gomod" ] || { echo "install-runtimes: no go.mod for $mod v$version" >&2; return 1; }
	mkdir -p "$dir"
	{
		printf 'module cnisuite.test/build\n\ngo 1.25\n\nrequire %s v%s\n\n' "$mod" "$version"
		awk -v p="$prefix" -v rv="$rv" '
			$1 == "replace" && $2 == "(" { inblock = 1; next }
			inblock && $1 == ")" { inblock = 0; next }
			{ line = $0; sub(/^[ \t]*(replace[ \t]+)?/, "", line); split(line, f, /[ \t]+/) }
			(inblock || $1 == "replace") && index(f[1], p) == 1 && f[2] == "=>" && f[3] ~ /^\.\.?\// {
				printf "replace %s => %s %s\n", f[1], f[1], rv
			}' "$gomod"
	} > "$dir/go.mod"
}

# versions prints the runtimes the end-to-end tests run: the Debian
# packages and the builds of the cache.
versions() {
	local name version dir
	dpkg-query -W -f='e2e runtime: ${Package} ${Version} (Debian)\n' containerd podman runc conmon 2>/dev/null || true
	for name in containerd crio critest rootlesskit nerdctl etcd k8s; do
		version=$(sed -n "s/^$(echo "$name" | tr a-z A-Z)_VERSION=//p" "$(dirname "$0")/runtime-versions.env")
		dir=$CACHE/$name-$version
		if [ -f "$dir/STAMP" ]; then
			echo "e2e runtime: $name $version ($dir, built $(sed -n 's/^built=//p' "$dir/STAMP") with $(sed -n 's/^go=//p' "$dir/STAMP"))"
		else
			echo "e2e runtime: $name $version NOT BUILT (run scripts/install-runtimes.sh)"
		fi
	done
}

if [ "$#" -eq 0 ]; then
	set -- containerd crio critest rootlesskit nerdctl etcd k8s
fi
for what in "$@"; do
	case $what in
	containerd | crio | critest | rootlesskit | nerdctl | etcd | k8s | versions) "$what" ;;
	*) echo "install-runtimes: unknown runtime $what (containerd, crio, critest, rootlesskit, nerdctl, etcd, k8s, versions)" >&2; exit 2 ;;
	esac
done
