#!/bin/bash
# Installs, idempotently, the Debian packages named after WHO (the script
# asking, for messages): nothing happens when all are installed. Packages
# are kept from starting services while they install (a policy-rc.d that
# refuses), so that nothing runs on the machine on the tests' behalf.
#
#   scripts/install-packages.sh install-vm-deps qemu-system-x86 cpio
set -euo pipefail
who=${1:?usage: install-packages.sh WHO PACKAGE...}
shift

missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "$who: ${missing[*]} missing; run as root to install them" >&2
	exit 1
fi
echo "$who: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' > "$policy"
	chmod +x "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
