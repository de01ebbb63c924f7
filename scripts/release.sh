#!/bin/bash
# Builds the release artifacts, reproducibly: building the same commit twice
# gives the same bytes.
#
#   scripts/release.sh tarballs       cnisuite-linux-<arch>-<version>.tgz per arch, SHA256SUMS, SHA512SUMS
#   scripts/release.sh deb            cnisuite_<debian version>_<debian arch>.deb and
#                                     cnisuite-tools_<debian version>_<debian arch>.deb per arch
#
# Both hold the plugins and the tools (cnisuite-gc): a tarball side by side
# at its top level, as the reference's are, for tar -C /opt/cni/bin; the
# packages the plugins in /usr/lib/cni (cnisuite, beside Debian's
# containernetworking-plugins: see docs/packaging.md) and the tools in
# /usr/sbin (cnisuite-tools, which stays when the plugins go).
#   scripts/release.sh debversion D   prints the Debian version for the git describe string D
#
# Environment (the Makefile sets the first two):
#   VERSION            the version stamped into every binary that links pkg/skel; default: git describe
#   RELEASE_DIR        where the artifacts go; default: release/
#   ARCHES             Go architectures; default: amd64 arm64 arm ppc64le s390x riscv64
#   SOURCE_DATE_EPOCH  the time every file carries; default: the commit's time
#   GO                 the go command; default: go
#
# Reproducible because the binaries are built with -trimpath (so their Go
# build IDs, hashes of what they are built from, are too) and pinned
# per-architecture levels, and the archives carry fixed times,
# owners and order (sorted names, tar --mtime --owner=0 --group=0, gzip -n;
# dpkg-deb honours SOURCE_DATE_EPOCH). -buildvcs=false keeps git's state out
# of the binaries: the same sources give the same bytes, from a checkout or
# from a source tarball, and the version already names the commit.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

ALL_ARCHES="amd64 arm64 arm ppc64le s390x riscv64"
GO=${GO:-go}
ARCHES=${ARCHES:-$ALL_ARCHES}
RELEASE_DIR=${RELEASE_DIR:-release}

die() {
	echo "release: $*" >&2
	exit 1
}

# debversion turns a git describe string into a Debian version: v1.2.3 →
# 1.2.3, v1.2.3-rc1 → 1.2.3~rc1 (sorts before 1.2.3), v1.2.3-4-gabc1234 →
# 1.2.3+4.gabc1234, a bare commit abc1234 → 0.0~git<commit date>.abc1234;
# -dirty adds .dirty (or +dirty).
debversion() {
	local d=$1 dirty="" upstream extra=""
	if [[ $d == *-dirty ]]; then
		d=${d%-dirty}
		dirty=dirty
	fi
	if [[ $d =~ ^(.+)-([0-9]+)-g([0-9a-f]+)$ ]]; then
		d=${BASH_REMATCH[1]}
		extra="${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}"
	fi
	d=${d#v}
	if [[ $d =~ ^[0-9a-f]{7,40}$ && -z $extra ]]; then
		upstream="0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).$d"
	elif [[ $d =~ ^[0-9][A-Za-z0-9.+~-]*$ ]]; then
		upstream=${d//-/\~}
	else
		die "version $1: cannot make a Debian version of it"
	fi
	extra=${extra:+$extra${dirty:+.}}$dirty
	if [ -n "$extra" ]; then
		[[ $upstream == *+* ]] && upstream="$upstream.$extra" || upstream="$upstream+$extra"
	fi
	echo "$upstream"
}

# debarch names a Go architecture the way Debian does.
debarch() {
	case $1 in
	amd64 | arm64 | s390x | riscv64) echo "$1" ;;
	arm) echo armhf ;;
	ppc64le) echo ppc64el ;;
	*) die "architecture $1: not one of $ALL_ARCHES" ;;
	esac
}

# PLUGINS are the plugin folders as packages, one binary each.
PLUGINS=(plugins/*/*/)
PLUGINS=("${PLUGINS[@]%/}")
PLUGINS=("${PLUGINS[@]/#/./}")

# TOOLS are the commands shipped with the plugins, named so that none
# collides with a plugin type in a tarball's flat layout. A new folder in
# cmd/ ships only once it is named here.
TOOLS=(./cmd/cnisuite ./cmd/cnisuite-gc)

# build compiles the packages $3... for the architecture $1 into the
# directory $2, one binary each, mode 0755, through scripts/build.sh (which
# links bridge with the build ID of the host-local beside it).
build() {
	local arch=$1 out=$2
	shift 2
	mkdir -p "$out"
	env CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOAMD64=v1 GOARM=7 GOARM64=v8.0 \
		GOPPC64=power8 GORISCV64=rva20u64 GOFLAGS=-mod=mod GO="$GO" \
		BUILDFLAGS="-trimpath -buildvcs=false" LDFLAGS="-s -w -X cnisuite/pkg/skel.Suite=$VERSION" \
		scripts/build.sh "$out" "$@"
	chmod 0755 "$out"/*
}

# sorted lists the files below $2 in the directory $1, in byte order, as
# the archives hold them.
sorted() {
	(cd "$1" && find "$2" -type f | LC_ALL=C sort)
}

# tarball packs the plugins and tools of one architecture with LICENSE,
# README.md and the systemd units of cnisuite watch and resync (whose
# ExecStart names /usr/sbin/cnisuite: docs/operations.md says what to
# change).
tarball() {
	local arch=$1 stage=$WORK/tgz-$1
	build "$arch" "$stage" "${PLUGINS[@]}" "${TOOLS[@]}"
	install -m 0644 LICENSE README.md packaging/systemd/*.service "$stage/"
	local name="cnisuite-linux-$arch-$VERSION.tgz"
	sorted "$stage" . |
		LC_ALL=C tar --create --format=ustar --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 \
			--numeric-owner --directory="$stage" --verbatim-files-from --files-from=- |
		gzip -9 -n >"$RELEASE_DIR/$name.tmp"
	mv "$RELEASE_DIR/$name.tmp" "$RELEASE_DIR/$name"
	echo "$name"
}

# each_arch runs $1 (tarball or deb) for every architecture and collects
# in BUILT the file name each run prints.
each_arch() {
	local arch name
	BUILT=()
	for arch in $ARCHES; do
		name=$("$1" "$arch")
		BUILT+=("$name")
	done
}

cmd_tarballs() {
	each_arch tarball
	(
		cd "$RELEASE_DIR"
		sha256sum "${BUILT[@]}" >SHA256SUMS
		sha512sum "${BUILT[@]}" >SHA512SUMS
	)
	echo "release: ${BUILT[*]} SHA256SUMS SHA512SUMS in $RELEASE_DIR"
}

# REFDIR is where the package's diversions send the reference package's
# copies of our five plugins: a directory no runtime searches (see
# docs/packaging.md).
REFDIR=/usr/lib/cnisuite/reference
# GCBIN is where cnisuite-tools keeps a copy of the plugins, whose GC
# cnisuite-gc runs after going back to the reference plugins.
GCBIN=/usr/lib/cnisuite/bin
# UNITDIR holds cnisuite-tools' systemd units (cnisuite watch, and a
# cnisuite resync run after the firewall services start), not enabled by
# the package: the admin enables them (docs/operations.md).
UNITDIR=/usr/lib/systemd/system

# control_fields writes the fields both packages share; $1 is the package
# root, $2 the architecture.
control_fields() {
	local root=$1 arch=$2 size
	size=$(du -sk --apparent-size "$root/usr" | cut -f1)
	cat <<EOF
Version: $(debversion "$VERSION")
Architecture: $(debarch "$arch")
Maintainer: ${DEB_MAINTAINER:-cnisuite developers <cnisuite@localhost>}
Installed-Size: $size
Section: net
Priority: optional
EOF
}

# control_plugins writes the control file of cnisuite, the plugins. It
# neither conflicts with nor replaces containernetworking-plugins: preinst
# diverts that package's copies of the five files it ships instead, so its
# other plugins (firewall, bandwidth, ...) stay, and podman's default
# network, which names firewall, keeps working; hence the Recommends.
control_plugins() {
	local root=$1 arch=$2
	echo "Package: cnisuite"
	control_fields "$root" "$arch"
	cat <<EOF
Depends: cnisuite-tools (= $(debversion "$VERSION")), iptables | nftables
Recommends: containernetworking-plugins
Provides: container-network-stack (= 1)
Description: CNI plugins bridge, host-local, loopback, portmap and tuning
 A drop-in replacement, written in Go, for the Container Network Interface
 reference plugins bridge, host-local, tuning, portmap and loopback, in
 /usr/lib/cni where podman and containerd look for them. They speak every
 CNI specification version from 0.1.0 to 1.1.0, including GC and STATUS.
 .
 Installed beside containernetworking-plugins: that package's copies of
 these five are diverted to $REFDIR, its other plugins
 (firewall, bandwidth, macvlan, ...) stay in /usr/lib/cni. Removing this
 package puts the diverted five back.
 .
 Version $VERSION.
EOF
}

# control_tools writes the control file of cnisuite-tools, the admin
# commands, in a package of their own so that they stay when the plugins
# go. Earlier builds of cnisuite held /usr/sbin/cnisuite-gc: Replaces
# lets this package take the file over from them. No Breaks: it would
# refuse `dpkg -i cnisuite-tools_<new>.deb cnisuite_<new>.deb` on every
# upgrade, since the installed cnisuite is always older than the new tools.
control_tools() {
	local root=$1 arch=$2 v
	v=$(debversion "$VERSION")
	echo "Package: cnisuite-tools"
	control_fields "$root" "$arch"
	cat <<EOF
Replaces: cnisuite (<< $v)
Description: administration tools of the cnisuite CNI plugins
 /usr/sbin/cnisuite resync puts back the firewall rules and sysctls of
 every pod that other software (nft flush ruleset, a firewalld reload,
 sysctl --system) removed. cnisuite gc (also /usr/sbin/cnisuite-gc)
 removes what the cnisuite plugins left for attachments the runtime no
 longer knows, as after going back to the reference plugins. They stay
 installed when the plugins (package cnisuite) are removed, which is when
 gc is needed, and so does the copy of the plugins it runs:
 cnisuite gc -bindir $GCBIN.
 .
 The units cnisuite-watch.service (the repair, run by itself whenever
 the firewall is reset) and cnisuite-resync.service are installed, not
 enabled.
 .
 Version $VERSION.
EOF
}

# copyright writes the Debian copyright file.
copyright() {
	cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: cnisuite

Files: *
Copyright: cnisuite developers
License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
}

# maintscript installs the maintainer script packaging/deb/$1.$2 into the
# package root $3, with the plugin names and REFDIR filled in.
maintscript() {
	local pkg=$1 script=$2 root=$3 names=() p
	for p in "${PLUGINS[@]}"; do names+=("${p##*/}"); done
	sed -e "s|@PLUGINS@|${names[*]}|" -e "s|@REFDIR@|$REFDIR|" \
		"packaging/deb/$pkg.$script" >"$root/DEBIAN/$script"
	chmod 0755 "$root/DEBIAN/$script"
}

# debpack finishes the root $1 of package $2 (documentation, md5sums, the
# control file control_$3 writes for the architecture $4, file times),
# builds it into RELEASE_DIR and prints the file name.
debpack() {
	local root=$1 pkg=$2 kind=$3 arch=$4 name
	local doc=$root/usr/share/doc/$pkg
	install -d -m 0755 "$doc" "$root/DEBIAN"
	copyright >"$doc/copyright"
	gzip -9 -n <README.md >"$doc/README.md.gz"
	chmod 0644 "$doc"/*
	(cd "$root" && sorted . usr | xargs md5sum) >"$root/DEBIAN/md5sums"
	"control_$kind" "$root" "$arch" >"$root/DEBIAN/control"
	chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"
	find "$root" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
	name="${pkg}_$(debversion "$VERSION")_$(debarch "$arch").deb"
	SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH dpkg-deb --root-owner-group -Zxz --build "$root" \
		"$RELEASE_DIR/$name" >/dev/null
	echo "$name"
}

# deb builds the two packages of one architecture, cnisuite (the plugins
# where Debian's containernetworking-plugins puts them, with the
# maintainer scripts that divert that package's copies) and cnisuite-tools
# (the tools on the admin's PATH, and in GCBIN a copy of the plugins for
# cnisuite-gc -bindir once cnisuite is gone), and prints both file names.
deb() {
	local arch=$1 plugins=$WORK/deb-$1 tools=$WORK/deb-tools-$1
	build "$arch" "$plugins/usr/lib/cni" "${PLUGINS[@]}"
	install -d -m 0755 "$plugins/DEBIAN"
	maintscript cnisuite preinst "$plugins"
	maintscript cnisuite postrm "$plugins"
	build "$arch" "$tools/usr/sbin" "${TOOLS[@]}"
	install -d -m 0755 "$tools$UNITDIR"
	install -m 0644 packaging/systemd/*.service "$tools$UNITDIR/"
	install -d -m 0755 "$tools$GCBIN"
	cp -p "$plugins/usr/lib/cni/"* "$tools$GCBIN/"
	echo "$(debpack "$plugins" cnisuite plugins "$arch") $(debpack "$tools" cnisuite-tools tools "$arch")"
}

cmd_deb() {
	each_arch deb
	echo "release: ${BUILT[*]} in $RELEASE_DIR"
}

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}
[[ $SOURCE_DATE_EPOCH =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH: set it, or build from a git checkout"

case ${1:-} in
debversion)
	[ $# = 2 ] || die "usage: $0 debversion <git describe output>"
	debversion "$2"
	exit
	;;
tarballs | deb) ;;
*) die "usage: $0 tarballs|deb|debversion <describe>" ;;
esac

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
[[ $VERSION =~ ^[A-Za-z0-9][A-Za-z0-9._+~-]*$ ]] || die "VERSION $VERSION: empty or not a file-name-safe version"
for arch in $ARCHES; do debarch "$arch" >/dev/null; done
mkdir -p "$RELEASE_DIR"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"cmd_$1"
