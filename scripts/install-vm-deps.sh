#!/bin/bash
# Installs, idempotently, what `make vmtest` needs to boot Debian 12's own
# kernel under qemu (TCG) with a busybox initramfs: qemu-system-x86, cpio,
# kmod (depmod, modprobe) and busybox-static. Debian 12 packages.
set -euo pipefail

PACKAGES=(qemu-system-x86 cpio kmod busybox-static)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-vm-deps: ${missing[*]} missing; run as root to install them" >&2
	exit 1
fi
echo "install-vm-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
