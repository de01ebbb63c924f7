#!/bin/bash
# inside sandbox: what one more ADD/CHECK/DEL costs with N pods already on the node.
# Puts the pods on the node in steps (NS="100 500 1000"), and at each step runs the (N+1)th
# pod's ADD, CHECK and DEL of a kubernetes.conflist-like chain (bridge+host-local -> tuning ->
# portmap, a host port per pod) under strace; growth.py then counts syscalls, netlink bytes by
# protocol and the state files each call opened, read and listed.
#   BK/PK: extra bridge/portmap keys (BK='"ipMasqBackend":"nftables",' PK='"backend":"nftables",')
#   PERF=1: also perf record M (10) more pods' ADD, CHECK and DEL at each step (growth.py
#   prints the kernel functions whose samples per call grow)
#   NS: the steps (default "100 500 1000"); OUT: where traces go (default /tmp/growth)
set -eu
ROOT=${ROOT:-$(cd "$(dirname "$0")/../../.." && pwd)}
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
NS=${NS:-100 500 1000}; OUT=${OUT:-/tmp/growth}; BK=${BK:-}; PK=${PK:-}
rm -rf "$OUT"; mkdir -p "$OUT/net"
cat > "$OUT/net/10.conflist" <<EOC
{"cniVersion":"1.0.0","name":"gnet","plugins":[
 {"type":"bridge","bridge":"gbr0","isGateway":true,"isDefaultGateway":true,"ipMasq":true,
  "hairpinMode":true,"mtu":1450, $BK
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.77.0.0/16"}]]}},
 {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
 {"type":"portmap", $PK "capabilities":{"portMappings":true},"snat":true}]}
EOC
export NETCONFPATH=$OUT/net CNI_PATH=$B
call() { # verb pod-number
	CAP_ARGS='{"portMappings":[{"hostPort":'$((20000 + $2))',"containerPort":80,"protocol":"tcp"}]}' \
		"$T/cnitool" "$1" gnet "/run/netns/g$2" >/dev/null
}
# perfstep N: M more pods' ADDs, then their CHECKs, then their DELs, each verb under
# perf record (cpu-clock: CPU time, whatever else the machine runs)
perfstep() {
	local m=${M:-10} v i
	for i in $(seq 1 "$m"); do ip netns add "q$i"; done
	for v in add check del; do
		perf record -q -e cpu-clock -F 4000 -g -o "$OUT/$1.$v.perf" -- bash -c '
			for i in $(seq 1 '"$m"'); do
				CAP_ARGS="{\"portMappings\":[{\"hostPort\":$((30000 + i)),\"containerPort\":80,\"protocol\":\"tcp\"}]}" \
					'"$T"'/cnitool '"$v"' gnet /run/netns/q$i >/dev/null
			done' 2>/dev/null
	done
	for i in $(seq 1 "$m"); do ip netns del "q$i"; done
}
have=0
for n in $NS; do
	for i in $(seq $((have + 1)) "$n"); do ip netns add "g$i"; call add "$i"; done
	have=$n; p=$((n + 1)); ip netns add "g$p"
	for v in add check del; do
		strace -f -Y -yy -s 0 -e raw=recvmsg,recvfrom,sendmsg,sendto -o "$OUT/$n.$v" \
			env CAP_ARGS='{"portMappings":[{"hostPort":'$((20000 + p))',"containerPort":80,"protocol":"tcp"}]}' \
			"$T/cnitool" "$v" gnet "/run/netns/g$p" >/dev/null
	done
	ip netns del "g$p"
	[ -z "${PERF:-}" ] || perfstep "$n"
	echo "N=$n: traced"
done
python3 "$ROOT/test/bench/profile/growth.py" "$OUT" $NS
