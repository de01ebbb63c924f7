#!/bin/bash
# Builds Go main packages into a directory, one binary each; when bridge and
# host-local are among them, links bridge once more with the Go build ID of
# the host-local just built (-X main.hostLocalBuildID), so that bridge runs
# exactly that host-local in its own process instead of starting it
# (pkg/invoke, InProcess). make build, scripts/release.sh and the tests'
# own builds (test/sandbox) all build through here.
#
#   scripts/build.sh OUT PKG...
#
# Environment: LDFLAGS, the -ldflags value; BUILDFLAGS, more go build flags
# (split on spaces); GO, the go command (default go); and the go command's
# own (CGO_ENABLED, GOARCH, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
GO=${GO:-go}
read -r -a flags <<<"${BUILDFLAGS:-}"
"$GO" build "${flags[@]}" -ldflags "${LDFLAGS:-}" -o "$out/" "$@"
if [ -f "$out/bridge" ] && [ -f "$out/host-local" ]; then
	id=$("$GO" tool buildid "$out/host-local")
	"$GO" build "${flags[@]}" -ldflags "${LDFLAGS:-} -X main.hostLocalBuildID=$id" -o "$out/" ./plugins/main/bridge
fi
