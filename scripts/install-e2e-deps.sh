#!/bin/bash
# Installs, idempotently, the real runtimes the end-to-end tests drive our
# plugins with (make e2e runs this): podman with its CNI backend, runc,
# conmon, containerd 1.6 with ctr, a static busybox for the containers' root
# filesystem, and curl to fetch what they serve; for rootless podman
# (TestRootlessPodman), slirp4netns and uidmap's newuidmap. Debian 12
# packages. Then the runtimes Kubernetes nodes run today, containerd 2.x and
# CRI-O, and
# cri-tools' critest, built from the Go module proxy into a cache that
# outlives the run (scripts/install-runtimes.sh; gcc and make for CRI-O's
# pinns).
set -euo pipefail

PACKAGES=(podman runc conmon slirp4netns uidmap busybox-static curl containerd iproute2 nftables util-linux gcc make libc6-dev)

"$(dirname "$0")/install-packages.sh" install-e2e-deps "${PACKAGES[@]}"
"$(dirname "$0")/install-runtimes.sh"

# The packages may start containerd on the machine; the tests start their
# own inside the sandbox and need no daemon outside it.
if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
	echo "install-e2e-deps: note: the containerd service is running; the tests do not use it"
fi
