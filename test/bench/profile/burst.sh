#!/bin/bash
# inside sandbox: burst of N pods K at a time on the chain; perf record the ADD phase and the DEL phase
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
N=${N:-60}; K=${K:-12}
rm -rf /tmp/pb; mkdir -p /tmp/pb/net /tmp/pb/data
cat > /tmp/pb/net/10.conflist <<EOC
{"cniVersion":"1.0.0","name":"bnet","plugins":[
 {"type":"bridge","bridge":"bbr0","isGateway":true,"ipMasq":true, $BK
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.78.0.0/16"}]],"dataDir":"/tmp/pb/data"}},
 {"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
 {"type":"portmap", $PK "capabilities":{"portMappings":true}}]}
EOC
export NETCONFPATH=/tmp/pb/net CNI_PATH=${PLUGDIR:-$B}
for i in $(seq 1 $N); do ip netns add b$i; done
phase() {
  for i in $(seq 1 $N); do
    CAP_ARGS='{"portMappings":[{"hostPort":'$((21000+i))',"containerPort":80,"protocol":"tcp"}]}' $T/cnitool $1 bnet /run/netns/b$i >/dev/null &
    while [ $(jobs -r | wc -l) -ge $K ]; do wait -n; done
  done
  wait
}
for v in add del; do
  s=$(date +%s%N)
  if [ -n "$PERF" ]; then perf record -q -a -g -o /tmp/perf.$v.data -- bash -c "$(declare -f phase); N=$N K=$K T=$T phase $v" 2>/dev/null; else phase $v; fi
  e=$(date +%s%N); echo "$v phase: $(( (e-s)/1000000 )) ms"
done
