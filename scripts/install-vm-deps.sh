#!/bin/bash
# Installs, idempotently, what `make vmtest` needs to boot Debian 12's own
# kernel under qemu (TCG) with a busybox initramfs: qemu-system-x86, cpio,
# kmod (depmod, modprobe) and busybox-static. Debian 12 packages.
set -euo pipefail
exec "$(dirname "$0")/install-packages.sh" install-vm-deps qemu-system-x86 cpio kmod busybox-static
