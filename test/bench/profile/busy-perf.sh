#!/bin/bash
# inside sandbox: 10,000 kube-proxy-style DNAT rules in iptables nat; perf record 20 default-chain ADDs
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${B:-$ROOT/bin}; T=$ROOT/bin/tools
python3 - > /tmp/busy.rules <<'PY'
print("*nat\n:KUBE-BENCH-SERVICES - [0:0]\n-A PREROUTING -j KUBE-BENCH-SERVICES\n-A OUTPUT -j KUBE-BENCH-SERVICES")
for i in range(10000):
    print("-A KUBE-BENCH-SERVICES -d 10.96.%d.%d/32 -p tcp --dport 80 -j DNAT --to-destination 10.244.%d.%d:8080" % (i//250, 1+i%250, i//250, 1+i%250))
print("COMMIT")
PY
iptables-restore --noflush < /tmp/busy.rules
rm -rf /tmp/pz; mkdir -p /tmp/pz/net /tmp/pz/data
cat > /tmp/pz/net/10.conflist <<EOC
{"cniVersion":"1.0.0","name":"znet","plugins":[
 {"type":"bridge","bridge":"zbr0","isGateway":true,"ipMasq":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.75.0.0/16"}]],"dataDir":"/tmp/pz/data"}},
 {"type":"portmap", "capabilities":{"portMappings":true}}]}
EOC
export NETCONFPATH=/tmp/pz/net CNI_PATH=$B
for i in $(seq 1 20); do ip netns add z$i; done
perf record -q -a -g -o /tmp/perf.busy.data -- bash -c 'for i in $(seq 1 20); do CAP_ARGS="{\"portMappings\":[{\"hostPort\":$((19000+i)),\"containerPort\":80,\"protocol\":\"tcp\"}]}" '$T'/cnitool add znet /run/netns/z$i >/dev/null; done' 2>/dev/null
perf report -i /tmp/perf.busy.data --no-children --comms bridge,portmap --sort sym --stdio -g none 2>/dev/null | grep "%" | head -15
echo; perf report -i /tmp/perf.busy.data --children --comms bridge,portmap --sort sym --stdio -g none 2>/dev/null | grep "\[k\]" | head -25
