#!/bin/bash
# Run inside scripts/sandbox.sh: which programs a full chain's ADD, CHECK and
# DEL start (strace -f -e trace=execve), per firewall backend. The chain:
# bridge (ipMasq, macspoofchk) + host-local -> tuning -> portmap with one host
# port, no user conditions. Nothing but the plugins, cnitool and the plugins'
# own helpers (/proc/self/exe) should appear on an iptables-nft or nftables
# node. BACKENDS: the keys to try ("" = none, the node's choice).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
W=/tmp/execs; rm -rf $W; mkdir -p $W/net $W/data
export NETCONFPATH=$W/net CNI_PATH=$B
for backend in ${BACKENDS:-nftables iptables none}; do
	bk=""; pk=""
	if [ "$backend" != none ]; then
		bk="\"ipMasqBackend\":\"$backend\","; pk="\"backend\":\"$backend\","
	fi
	cat > $W/net/10.conflist <<EOC
{"cniVersion":"1.1.0","name":"xnet","plugins":[
 {"type":"bridge","bridge":"xbr0","isGateway":true,"ipMasq":true,"macspoofchk":true,$bk
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.79.0.0/24"}]],"dataDir":"$W/data"}},
 {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
 {"type":"portmap",$pk"capabilities":{"portMappings":true}}]}
EOC
	ip netns add xc0
	for verb in add check del; do
		CAP_ARGS='{"portMappings":[{"hostPort":18080,"containerPort":80,"protocol":"tcp"}]}' \
			strace -f -qq -e trace=execve -e signal=none -o $W/trace $T/cnitool $verb xnet /run/netns/xc0 >/dev/null
		progs=$(grep -o 'execve("[^"]*", \["[^"]*"\(, "[^"]*"\)\{0,2\}' $W/trace |
			sed 's/execve("\([^"]*\)", \[\(.*\)/\1 \2/; s/"//g; s/,//g' | awk '{$2=""; print}' | sort | uniq -c | tr -s ' ' | paste -sd ';')
		echo "backend $backend, $verb:$progs"
	done
	ip netns del xc0
done
