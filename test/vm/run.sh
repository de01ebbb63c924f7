#!/bin/bash
# Boots Debian 12's own kernel under qemu (TCG, no network device) and runs
# the privileged tests listed in test/vm/tests.txt inside it: the kernel our
# users run has bridge VLAN filtering, dummy links and modular netfilter,
# which this machine's kernel lacks or builds in. See test/vm/README.md.
#
#   test/vm/run.sh            (make vmtest)
#
# Environment:
#   CNISUITE_VM_KERNEL_PKG  kernel package (default: what linux-image-amd64 depends on)
#   CNISUITE_VM_CACHE       cache of kernel packages and initramfs (default /var/cache/cnisuite-vm,
#                           or $XDG_CACHE_HOME/cnisuite-vm when not root)
#   CNISUITE_VM_TIMEOUT     seconds the VM may run before it is killed (default 1200)
#   CNISUITE_VM_PLAN        plan file (default test/vm/tests.txt)
#   CNISUITE_VM_MODULES     modules to load before the tests (default: MODULES below)
#   CNISUITE_VM_KEEP=1      keep the run's work directory (binaries, logs, console)
#   CNISUITE_BIN            built plugins to test (default: built into the work directory)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
GO=${GO:-go}
if [ "$(id -u)" = 0 ]; then
	CACHE=${CNISUITE_VM_CACHE:-/var/cache/cnisuite-vm}
else
	CACHE=${CNISUITE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cnisuite-vm}
fi
TIMEOUT=${CNISUITE_VM_TIMEOUT:-1200}
PLAN=${CNISUITE_VM_PLAN:-$HERE/tests.txt}
# Loaded before the tests run; anything else the kernel asks for on demand.
# br_netfilter is loaded as Kubernetes nodes load it (this machine kind has
# it built in); CNISUITE_VM_MODULES replaces the list.
MODULES=(bridge veth 8021q dummy br_netfilter nf_tables nft_compat nft_chain_nat nft_nat nft_masq
	nft_ct nft_fib_inet nft_reject_inet nf_conntrack nf_nat nf_conntrack_netlink xt_MASQUERADE
	xt_comment xt_conntrack xt_addrtype xt_mark xt_multiport xt_nat iptable_nat ip6table_nat vrf)
if [ -n "${CNISUITE_VM_MODULES:-}" ]; then
	read -r -a MODULES <<<"$CNISUITE_VM_MODULES"
fi

log() { echo "vmtest: $*"; }
die() {
	echo "vmtest: $*" >&2
	exit 1
}

# resolve_kernel prints the kernel package to boot.
resolve_kernel() {
	if [ -n "${CNISUITE_VM_KERNEL_PKG:-}" ]; then
		echo "$CNISUITE_VM_KERNEL_PKG"
		return
	fi
	local pkg
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
	if [ -z "$pkg" ]; then
		apt-get update -qq >&2 || true
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
	fi
	[ -n "$pkg" ] || die "cannot resolve the kernel package behind linux-image-amd64; set CNISUITE_VM_KERNEL_PKG"
	echo "$pkg"
}

# fetch_kernel downloads and unpacks package $1 into $CACHE/$1 once, with
# modules.dep built for its modules.
fetch_kernel() {
	local pkg=$1 dir=$CACHE/$1
	[ -e "$dir/ready" ] && return
	log "fetching $pkg"
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	if ! (cd "$dir.tmp" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null); then
		rm -rf "$dir.tmp"
		return 1
	fi
	dpkg-deb -x "$dir.tmp"/*.deb "$dir.tmp/root" || return 1
	rm -f "$dir.tmp"/*.deb
	local kver
	kver=$(ls "$dir.tmp/root/lib/modules") || return 1
	depmod -b "$dir.tmp/root" "$kver" || return 1
	echo "$kver" >"$dir.tmp/kver"
	touch "$dir.tmp/ready"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
}

# copy_module copies kernel module $1 to $2, decompressed (busybox insmod
# takes plain .ko files only).
copy_module() {
	case "$1" in
	*.ko.xz) xz -dc "$1" >"$2" ;;
	*.ko.zst) zstd -qdc "$1" >"$2" ;;
	*.ko.gz) gzip -dc "$1" >"$2" ;;
	*) cp "$1" "$2" ;;
	esac
}

# build_initramfs makes $CACHE/$pkg/initramfs.cpio.gz: busybox, init.sh as
# /init, and the virtio and 9p modules in load order.
build_initramfs() {
	local dir=$1 kver img=$1/initramfs.cpio.gz
	kver=$(cat "$dir/kver")
	if [ -e "$img" ] && [ "$img" -nt "$HERE/init.sh" ] && [ "$img" -nt "$HERE/run.sh" ]; then
		return
	fi
	log "building the initramfs"
	local tree
	tree=$(mktemp -d "$CACHE/initramfs.XXXXXX")
	mkdir -p "$tree/bin" "$tree/modules" "$tree/proc" "$tree/sys" "$tree/dev" "$tree/newroot"
	cp "$(command -v busybox)" "$tree/bin/busybox"
	for cmd in sh mount mkdir insmod chroot sleep; do
		ln -s busybox "$tree/bin/$cmd"
	done
	cp "$HERE/init.sh" "$tree/init"
	chmod 0755 "$tree/init"
	local path name
	modprobe -d "$dir/root" -S "$kver" --show-depends -a virtio_pci 9pnet_virtio 9p |
		awk '$1 == "insmod" && !seen[$2]++ {print $2}' |
		while read -r path; do
			name=$(basename "$path" | sed 's/\.ko.*$/.ko/')
			copy_module "$path" "$tree/modules/$name"
			echo "$name" >>"$tree/modules/order"
		done
	[ -s "$tree/modules/order" ] || die "no virtio/9p modules found for $kver"
	(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1 >"$img.tmp")
	mv "$img.tmp" "$img"
	rm -rf "$tree"
}

# plan_lines prints the plan without comments and blank lines.
plan_lines() { grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$PLAN"; }

# build_tests builds the plugins (or copies $CNISUITE_BIN) and one test
# binary per plan line into the work directory $1, and writes its plan.
build_tests() {
	local work=$1 name pkg run
	mkdir -p "$work/bin" "$work/tests" "$work/out"
	if [ -n "${CNISUITE_BIN:-}" ]; then
		cp -a "$CNISUITE_BIN"/. "$work/bin/"
	else
		(cd "$ROOT" && CGO_ENABLED=0 GO="$GO" BUILDFLAGS=-trimpath scripts/build.sh "$work/bin" ./plugins/*/*)
	fi
	reference_vrf "$work/bin"
	while read -r name pkg run; do
		log "building $name ($pkg)"
		(cd "$ROOT" && CGO_ENABLED=0 "$GO" test -c -o "$work/tests/$name.test" "./$pkg")
		echo "$name $ROOT/$pkg $run" >>"$work/plan"
	done < <(plan_lines)
	cp "$HERE/guest.sh" "$work/guest.sh"
	echo "${MODULES[*]}" >"$work/modules"
}

# reference_vrf puts the reference's vrf plugin, which this machine kind's
# kernel cannot run, beside the plugins under test (dir $1): Debian 12's
# build in ref-debian/, the pinned release (scripts/reference-plugins.sh)
# in ref-v1.9.1/, for test/vm/smoke's TestVRFChained.
reference_vrf() {
	local bin=$1 deb tmp
	deb=$(compgen -G "/var/cache/cnisuite/debs/containernetworking-plugins_*.deb" | head -n 1) ||
		die "no containernetworking-plugins package in /var/cache/cnisuite/debs (make deps fetches it)"
	tmp=$(mktemp -d)
	dpkg-deb -x "$deb" "$tmp"
	mkdir -p "$bin/ref-debian"
	cp "$tmp/usr/lib/cni/vrf" "$bin/ref-debian/vrf"
	rm -rf "$tmp"
	log "building the reference's vrf"
	(cd "$ROOT" && GOPROXY=${GOPROXY:-off} REFERENCE_PLUGINS=meta/vrf scripts/reference-plugins.sh "$bin/ref-v1.9.1")
}

# boot runs the VM on kernel dir $1 with work directory $2, bounded by
# $TIMEOUT seconds, with the console on stdout and in $2/console.log.
boot() {
	local dir=$1 work=$2 kernel
	kernel=$(ls "$dir"/root/boot/vmlinuz-*)
	local share=security_model=none,multidevs=remap
	qemu-system-x86_64 -accel tcg -cpu max -smp "${CNISUITE_VM_CPUS:-2}" -m "${CNISUITE_VM_MEM:-2048}" \
		-display none -monitor none -serial "file:$work/console.log" -nic none -no-reboot \
		-kernel "$kernel" -initrd "$dir/initramfs.cpio.gz" \
		-append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=4" \
		-virtfs "local,path=/,mount_tag=hostroot,readonly=on,$share" \
		-virtfs "local,path=$dir/root,mount_tag=modules,readonly=on,$share" \
		-virtfs "local,path=$work,mount_tag=work,$share" \
		</dev/null >"$work/qemu.log" 2>&1 &
	QEMU_PID=$!
	touch "$work/console.log"
	tail -n +1 -f --pid="$QEMU_PID" "$work/console.log" &
	local start=$SECONDS
	while kill -0 "$QEMU_PID" 2>/dev/null; do
		if ((SECONDS - start >= TIMEOUT)); then
			log "timeout: the VM ran ${TIMEOUT} s; killing qemu (pid $QEMU_PID)"
			kill "$QEMU_PID" 2>/dev/null || true
			sleep 5
			kill -9 "$QEMU_PID" 2>/dev/null || true
			break
		fi
		sleep 1
	done
	wait "$QEMU_PID" || log "qemu exited with status $? ($(tail -n 3 "$work/qemu.log" | tr '\n' ' '))"
	QEMU_PID=
	wait || true # the console tail
	log "the VM ran $((SECONDS - start)) s"
}

# report checks every plan line's result in work directory $1: exit 0, at
# least one test passed, none skipped (in the VM nothing may skip). It prints
# the log of each failed binary and a closing count.
report() {
	local work=$1 name rest pass=0 fail=0 bad=()
	if [ -e "$work/out/modules.rc" ]; then
		cat "$work/out/guest.log" 2>/dev/null
		bad+=(modules)
	fi
	while read -r name rest; do
		local out=$work/out/$name
		local p f s
		p=$(grep -c -- '--- PASS' "$out.log" 2>/dev/null) || true
		f=$(grep -c -- '--- FAIL' "$out.log" 2>/dev/null) || true
		s=$(grep -c -- '--- SKIP' "$out.log" 2>/dev/null) || true
		pass=$((pass + ${p:-0}))
		fail=$((fail + ${f:-0} + ${s:-0}))
		if [ "$(cat "$out.rc" 2>/dev/null)" != 0 ] || [ "${p:-0}" = 0 ] || [ "${s:-0}" != 0 ]; then
			bad+=("$name")
			echo "==== $name: exit $(cat "$out.rc" 2>/dev/null || echo none), ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
			cat "$out.log" 2>/dev/null || echo "(no output: the VM did not run it)"
		fi
		grep -h -E -- '^\s*--- (PASS|FAIL|SKIP)' "$out.log" 2>/dev/null | sed "s/^/$name: /" || true
	done < <(plan_lines)
	if [ "${#bad[@]}" -gt 0 ]; then
		log "failed: ${bad[*]}"
		fail=$((fail > 0 ? fail : 1))
	fi
	echo "vmtest: $pass passed, $fail failed"
	[ "${#bad[@]}" -eq 0 ]
}

cleanup() {
	if [ -n "${QEMU_PID:-}" ]; then
		kill "$QEMU_PID" 2>/dev/null || true
	fi
	if [ -n "${WORK:-}" ] && [ "${CNISUITE_VM_KEEP:-}" != 1 ]; then
		rm -rf "$WORK"
	fi
}

main() {
	[ "$(id -u)" = 0 ] || die "needs root (apt-get download, 9p export of /)"
	for c in qemu-system-x86_64 cpio depmod busybox; do
		command -v "$c" >/dev/null || die "$c missing: run scripts/install-vm-deps.sh"
	done
	mkdir -p "$CACHE"
	# One run at a time fetches and builds in the cache.
	exec 9>"$CACHE/lock"
	flock -w 600 9 || die "another run holds $CACHE/lock"
	local pkg
	pkg=$(resolve_kernel)
	if ! fetch_kernel "$pkg" && [ -z "${CNISUITE_VM_KERNEL_PKG:-}" ]; then
		# Old package lists can name a kernel the archive no longer has.
		log "apt-get download $pkg failed; updating the package lists"
		apt-get update -qq || true
		pkg=$(resolve_kernel)
		fetch_kernel "$pkg" || die "apt-get download $pkg failed"
	fi
	[ -e "$CACHE/$pkg/ready" ] || die "apt-get download $pkg failed"
	build_initramfs "$CACHE/$pkg"
	flock -u 9
	# The VM mounts tmpfs over these; a read-only share cannot make them.
	mkdir -p /var/lib/cni /etc/cni /opt/cni /var/lib/containers /var/lib/containerd /etc/containers
	WORK=$(mktemp -d "$CACHE/run.XXXXXX")
	trap cleanup EXIT
	build_tests "$WORK"
	log "booting $pkg ($(cat "$CACHE/$pkg/kver")) under qemu TCG, at most $TIMEOUT s"
	boot "$CACHE/$pkg" "$WORK"
	[ "${CNISUITE_VM_KEEP:-}" = 1 ] && log "work directory kept: $WORK"
	report "$WORK"
}

main "$@"
