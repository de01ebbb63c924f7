#!/bin/bash
# Installs, idempotently, the real runtimes the end-to-end tests drive our
# plugins with (make e2e runs this): podman with its CNI backend, runc,
# conmon, containerd 1.6 with ctr, a static busybox for the containers' root
# filesystem, and curl to fetch what they serve. Debian 12 packages.
set -euo pipefail

PACKAGES=(podman runc conmon busybox-static curl containerd iproute2 nftables util-linux)

"$(dirname "$0")/install-packages.sh" install-e2e-deps "${PACKAGES[@]}"

# The packages may start containerd on the machine; the tests start their
# own inside the sandbox and need no daemon outside it.
if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
	echo "install-e2e-deps: note: the containerd service is running; the tests do not use it"
fi
