#!/bin/bash
# Times portmap ADD and DEL of one attachment with many host ports, ours
# beside the reference's, on nftables, iptables-nft and iptables-legacy:
# N single TCP ports from 10000, and N ranges of two ports every three from
# 2000 (TCP and UDP by turns; the reference knows no range key and maps the
# first port of each). Each call is bounded by TIMEOUT seconds (default
# 120); one that runs out is reported as such. Run it in the sandbox:
#
#   scripts/sandbox.sh test/bench/many-ports.sh BIN REFDIR [N]
#
# One line per call: plugin, backend, kind, verb, exit status, seconds,
# and what is left of the attachment's rules after it (lines naming the
# container address).
set -uo pipefail
bin=${1:?usage: many-ports.sh BIN REFDIR [N]}
ref=${2:?usage: many-ports.sh BIN REFDIR [N]}
n=${3:-10000}
timeout=${TIMEOUT:-120}
addr=10.77.0.2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# variant_path DIR MULTI: iptables tools of one kind first on PATH.
variant_path() {
	mkdir -p "$1"
	for t in iptables ip6tables iptables-restore ip6tables-restore iptables-save ip6tables-save; do
		ln -sf "$2" "$1/$t"
	done
	echo "$1:$PATH"
}

# conf BACKEND KIND: the configuration, with N mappings.
conf() {
	local backend=$1 kind=$2 i sep=
	printf '{"cniVersion":"1.0.0","name":"many","type":"portmap","backend":"%s","allowPortRanges":true,"runtimeConfig":{"portMappings":[' "$backend"
	for ((i = 0; i < n; i++)); do
		if [ "$kind" = single ]; then
			printf '%s{"hostPort":%d,"containerPort":%d,"protocol":"tcp"}' "$sep" $((10000 + i)) $((10000 + i))
		else
			local proto=tcp
			((i % 2)) && proto=udp
			printf '%s{"hostPort":%d,"containerPort":%d,"protocol":"%s","range":2}' "$sep" $((2000 + 3 * i)) $((2000 + 3 * i)) "$proto"
		fi
		sep=,
	done
	printf ']},"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],"ips":[{"address":"%s/24","interface":0}]}}' "$addr"
}

# left BACKEND: lines of the node's rules naming the container address.
left() {
	local rules
	case $1 in
	nftables) rules=$(nft list ruleset) ;;
	*) rules=$(iptables-save -t nat 2>/dev/null) ;;
	esac
	grep -c "$addr" <<<"$rules"
}

# call PLUGIN BACKEND KIND VERB FILE
call() {
	local plugin=$1 backend=$2 kind=$3 verb=$4 file=$5 start end rc
	start=$(date +%s.%N)
	CNI_COMMAND=$verb CNI_CONTAINERID=many-ctr CNI_NETNS=/var/run/netns/x CNI_IFNAME=eth0 \
		CNI_PATH=$(dirname "$plugin") timeout "$timeout" "$plugin" <"$file" >"$work/out" 2>&1
	rc=$?
	end=$(date +%s.%N)
	local who=ours
	[ "$plugin" = "$bin/portmap" ] || who=reference
	printf '%-9s %-16s %-6s %-3s rc=%-3s %8.2f s  rules naming %s: %s\n' "$who" \
		"$label" "$kind" "$verb" "$rc" "$(echo "$end - $start" | bc)" "$addr" "$(left "$backend")"
	[ "$rc" = 0 ] || { head -c 300 "$work/out" | sed 's/^/    /'; echo; }
}

for variant in nftables iptables-nft iptables-legacy; do
	case $variant in
	nftables) backend=nftables ;;
	iptables-nft) backend=iptables PATH=$(variant_path "$work/nft" /usr/sbin/xtables-nft-multi) ;;
	iptables-legacy) backend=iptables PATH=$(variant_path "$work/legacy" /usr/sbin/xtables-legacy-multi) ;;
	esac
	label=$variant
	for kind in single ranges; do
		conf "$backend" "$kind" >"$work/conf.json"
		for plugin in "$bin/portmap" "$ref/portmap"; do
			call "$plugin" "$backend" "$kind" ADD "$work/conf.json"
			call "$plugin" "$backend" "$kind" DEL "$work/conf.json"
		done
	done
done
