#!/bin/bash
# run inside sandbox: 20 ADD/CHECK/DEL of a chain with logging at info; print step medians
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
rm -rf /tmp/p; mkdir -p /tmp/p/net /tmp/p/data
L='"logFile":"/tmp/p/log","logLevel":"info",'
cat > /tmp/p/net/10.conflist <<EOC
{"cniVersion":"1.0.0","name":"pnet","plugins":[
 {"type":"bridge","bridge":"pbr0","isGateway":true,"ipMasq":true, $BK $L
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.77.0.0/16"}]],"dataDir":"/tmp/p/data"}},
 {"type":"tuning", $L "sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}},
 {"type":"portmap", $PK $L "capabilities":{"portMappings":true}}]}
EOC
export NETCONFPATH=/tmp/p/net CNI_PATH=$B
N=${N:-20}
for i in $(seq 1 $N); do ip netns add pc$i; done
for v in add check del; do for i in $(seq 1 $N); do
 CAP_ARGS='{"portMappings":[{"hostPort":'$((18000+i))',"containerPort":80,"protocol":"tcp"}]}' $T/cnitool $v pnet /run/netns/pc$i >/dev/null; done; done
python3 - <<'PY'
import json,statistics,collections
d=collections.defaultdict(list)
for l in open('/tmp/p/log'):
    j=json.loads(l)
    k=(j.get('plugin') or j.get('type'), j.get('command') or j.get('verb'))
    d[k+('total',)].append(j.get('ms') or j.get('durationMs') or 0)
    for s in j.get('steps') or []:
        d[k+(s['name'],)].append(s['ms'])
for k in sorted(d): print(k, round(statistics.median(d[k]),2), len(d[k]))
PY
