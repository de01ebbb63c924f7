#!/bin/bash
# Builds Go main packages into a directory, one binary each; bridge last,
# linked with the Go build ID of the host-local in that directory
# (-X main.hostLocalBuildID), so that bridge runs exactly that host-local in
# its own process instead of starting it
# (pkg/invoke, InProcess). make build, scripts/release.sh and the tests'
# own builds (test/sandbox) all build through here.
#
#   scripts/build.sh OUT PKG...
#
# Environment: LDFLAGS, the -ldflags value; BUILDFLAGS, more go build flags
# (split on spaces); GO, the go command (default go); and the go command's
# own (CGO_ENABLED, GOARCH, ...).
set -euo pipefail
out=$(realpath -m "$1") # before the cd: OUT may be relative to the caller
shift
cd "$(dirname "$0")/.."
GO=${GO:-go}
read -r -a flags <<<"${BUILDFLAGS:-}"
# bridge is linked last, once, with the ID of the host-local in $out (none
# when there is no host-local there: bridge then starts it as a process).
others=()
bridge=
for p in "$@"; do
	case ${p%/} in
	plugins/main/bridge | */plugins/main/bridge) bridge=$p ;;
	*) others+=("$p") ;;
	esac
done
if [ ${#others[@]} -gt 0 ]; then
	"$GO" build "${flags[@]}" -ldflags "${LDFLAGS:-}" -o "$out/" "${others[@]}"
fi
if [ -n "$bridge" ]; then
	id=
	if [ -f "$out/host-local" ]; then
		id=$("$GO" tool buildid "$out/host-local")
	fi
	"$GO" build "${flags[@]}" -ldflags "${LDFLAGS:-} -X main.hostLocalBuildID=$id" -o "$out/" "$bridge"
fi
