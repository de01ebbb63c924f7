#!/bin/bash
# Installs, idempotently, the real runtimes the end-to-end tests drive our
# plugins with (make e2e runs this): podman with its CNI backend, runc,
# conmon, containerd 1.6 with ctr, a static busybox for the containers' root
# filesystem, and curl to fetch what they serve. Debian 12 packages.
set -euo pipefail

PACKAGES=(podman runc conmon busybox-static curl containerd iproute2 nftables util-linux)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-e2e-deps: ${missing[*]} missing; run as root to install them" >&2
	exit 1
fi
echo "install-e2e-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep the packages from starting their services (containerd) while they
# install: nothing outside the sandbox should run on their behalf.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' > "$policy"
	chmod +x "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# The packages may start containerd on the machine; the tests start their
# own inside the sandbox and need no daemon outside it.
if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
	echo "install-e2e-deps: note: the containerd service is running; the tests do not use it"
fi
