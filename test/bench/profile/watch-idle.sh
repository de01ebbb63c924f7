#!/bin/bash
# Run inside scripts/sandbox.sh: the idle cost of `cnisuite watch` on a node
# with N pods (bridge with ipMasq + host-local → portmap, one host port
# each, through cnitool): its own CPU and its waited-for children's (the
# plugins its safety net starts once a minute) over DUR seconds, from
# /proc/<pid>/stat, and its memory. B: our binaries (bin/, with tools/);
# BACKEND: empty (the node's choice) or iptables/nftables.
#   scripts/sandbox.sh test/bench/profile/watch-idle.sh
#   BACKEND=iptables N=100 DUR=600 scripts/sandbox.sh test/bench/profile/watch-idle.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${B:-$ROOT/bin}; N=${N:-100}; DUR=${DUR:-600}; BACKEND=${BACKEND:-}
keys=""; pkeys=""
if [ -n "$BACKEND" ]; then keys="\"ipMasqBackend\":\"$BACKEND\","; pkeys="\"backend\":\"$BACKEND\","; fi
W=${TMPDIR:-/tmp}/watch-idle; mkdir -p $W
cat > $W/10-idle.conflist <<J
{"cniVersion":"1.0.0","name":"idle","plugins":[
 {"type":"bridge","bridge":"idle0","isGateway":true,"ipMasq":true,$keys"ipam":{"type":"host-local","ranges":[[{"subnet":"10.77.0.0/16"}]]}},
 {"type":"portmap",$pkeys"capabilities":{"portMappings":true}}]}
J
ip link set lo up
export NETCONFPATH=$W CNI_PATH=$BIN
for i in $(seq 1 $N); do
  ip netns add p$i
  CAP_ARGS="{\"portMappings\":[{\"hostPort\":$((40000+i)),\"containerPort\":80,\"protocol\":\"tcp\"}]}" \
    $BIN/tools/cnitool add idle /run/netns/p$i >/dev/null
done
echo "pods: $N, records: $(find /run/cnisuite/records -type f | wc -l)"
$BIN/cnisuite watch > $W/watch.log 2>&1 &
WPID=$!
sleep 5
read -r u0 s0 cu0 cs0 < <(awk '{print $14, $15, $16, $17}' /proc/$WPID/stat)
sleep $DUR
read -r u1 s1 cu1 cs1 < <(awk '{print $14, $15, $16, $17}' /proc/$WPID/stat)
tck=$(getconf CLK_TCK)
echo "watch idle ${DUR}s, backend '${BACKEND}': own CPU $(( (u1+s1-u0-s0)*1000/tck )) ms, children's CPU $(( (cu1+cs1-cu0-cs0)*1000/tck )) ms"
grep -E 'VmRSS|VmHWM' /proc/$WPID/status
kill $WPID; wait $WPID 2>/dev/null || true
tail -5 $W/watch.log
for i in $(seq 1 $N); do $BIN/tools/cnitool del idle /run/netns/p$i >/dev/null || echo "del p$i failed"; done
echo "nft tables left:"; nft list tables
