#!/bin/bash
# inside sandbox: median of 30 sequential bridge DELs through cnitool, then the timeline of one under strace
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
rm -rf /tmp/pq; mkdir -p /tmp/pq/net /tmp/pq/data
cat > /tmp/pq/net/10.conflist <<EOC
{"cniVersion":"1.0.0","name":"qnet","plugins":[
 {"type":"bridge","bridge":"qbr0","isGateway":true,"ipMasq":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.76.0.0/16"}]],"dataDir":"/tmp/pq/data"}}]}
EOC
export NETCONFPATH=/tmp/pq/net CNI_PATH=$B
for i in $(seq 1 31); do ip netns add q$i; $T/cnitool add qnet /run/netns/q$i >/dev/null; done
for i in $(seq 1 30); do
 s=$(date +%s%N); $T/cnitool del qnet /run/netns/q$i; e=$(date +%s%N); echo "$(( (e-s)/1000 ))" >> /tmp/pq/dels
done
strace -f -tt -qq -e trace=execve,exit_group,clone,clone3,wait4,waitid -o /tmp/pq/tr $T/cnitool del qnet /run/netns/q31
grep -v "SIGCHLD\|resumed" /tmp/pq/tr | cut -c1-140
sort -n /tmp/pq/dels | awk "{a[NR]=\$1} END {print \"median del us\", a[int(NR/2)+1]}"
