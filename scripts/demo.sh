#!/bin/bash
# The demo: attach two "containers" (network namespaces) to a network made of
# our bridge + host-local + tuning + portmap (with loopback), through cnitool,
# the runtime client of the CNI project, and show traffic flowing.
# Runs inside scripts/sandbox.sh (make demo does that): nothing here touches
# the machine's own network.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CNISUITE_BIN:-$PWD/bin}
TOOLS=${CNISUITE_TOOLS:-$BIN/tools}

if [ "${CNISUITE_SANDBOX:-}" != 1 ] || [ -z "${CNISUITE_SANDBOX_NETNS:-}" ] ||
	[ "$(readlink /proc/self/ns/net)" != "$CNISUITE_SANDBOX_NETNS" ]; then
	echo "demo: run me through scripts/sandbox.sh (make demo)" >&2
	exit 1
fi

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
say() { printf '   %s\n' "$*"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# cni runs one cnitool verb on a network and prints how long it took.
cni() {
	local verb=$1 net=$2 ns=$3 start out
	start=$(date +%s%N)
	out=$("$TOOLS/cnitool" "$verb" "$net" "$ns" 2>&1) || { echo "$out"; say "cnitool $verb $net FAILED"; exit 1; }
	say "cnitool $verb $net $ns: $(ms_since "$start") ms"
	[ -z "$out" ] || echo "$out" | sed 's/^/      /'
}

bold "1. Install the plugins where runtimes look for them"
mkdir -p /opt/cni/bin /etc/cni/net.d
cp "$BIN"/bridge "$BIN"/host-local "$BIN"/tuning "$BIN"/portmap "$BIN"/loopback /opt/cni/bin/
ls /opt/cni/bin | sed 's/^/   /'
cp examples/demo.conflist /etc/cni/net.d/10-demo.conflist
cp examples/loopback.conflist /etc/cni/net.d/99-loopback.conflist
say "network config /etc/cni/net.d/10-demo.conflist:"
sed 's/^/      /' /etc/cni/net.d/10-demo.conflist
export CNI_PATH=/opt/cni/bin NETCONFPATH=/etc/cni/net.d

bold "2. The node: a private network namespace standing in for the host"
# A node address on a veth pair (this kernel has no dummy driver), so the
# port mapping has a node address other than loopback to answer on.
ip link add node0 type veth peer name node0-peer
ip addr add 192.0.2.10/24 dev node0
ip link set node0 up
ip link set node0-peer up
say "node address 192.0.2.10 on node0"

bold "3. Two containers: network namespaces c1 and c2"
ip netns add c1
ip netns add c2
say "created /run/netns/c1 and /run/netns/c2; bring up their loopback as every runtime does:"
CNI_IFNAME=lo cni add loopback /run/netns/c1
CNI_IFNAME=lo cni add loopback /run/netns/c2

bold "4. ADD: attach c1 and c2 (c2 publishes host port 8080 -> its port 80)"
CAP_ARGS='{}' cni add demo /run/netns/c1
CAP_ARGS='{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}' cni add demo /run/netns/c2
ip1=$(ip -n c1 -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
ip2=$(ip -n c2 -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
say "c1 has $ip1, c2 has $ip2, bridge $(ip -4 -o addr show cni-demo | awk '{print $4}')"

say "the firewall rules our plugins wrote, each tagged with its owner (plugin/network/container/interface):"
{ iptables-save -t nat 2>/dev/null; nft list ruleset 2>/dev/null | grep -E '^table|cnisuite'; } \
	| grep -E 'cnisuite|^table' | grep -v '^# ' | sed 's/^/      /'

bold "5. Traffic: c1 pings c2 across the bridge"
ip netns exec c1 ping -c 3 -i 0.2 -W 2 "$ip2" | sed 's/^/   /'

bold "6. Traffic: a web page served in c2, fetched through host port 8080"
cat > /run/demo-page.sh <<'PAGE'
#!/bin/sh
# Read the request up to its blank line, then answer.
while IFS= read -r line; do
	case "$line" in "" | "$(printf '\r')") break ;; esac
done
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello from container c2\n'
PAGE
chmod +x /run/demo-page.sh
ip netns exec c2 socat TCP-LISTEN:80,fork,reuseaddr EXEC:/run/demo-page.sh &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do ip netns exec c2 ss -ltn | grep -q ':80 ' && break; sleep 0.1; done
for target in 192.0.2.10 127.0.0.1; do
	say "curl http://$target:8080/ from the node:"
	curl -sS --max-time 5 "http://$target:8080/" | sed 's/^/      /'
done
say "curl http://192.0.2.10:8080/ from c1 (through the node's address):"
ip netns exec c1 curl -sS --max-time 5 "http://192.0.2.10:8080/" | sed 's/^/      /'

bold "7. CHECK and STATUS: the attachments are as ADD left them, the network is ready"
cni check demo /run/netns/c1
cni check demo /run/netns/c2
cni status demo /run/netns/c1

bold "8. DEL c1, then GC: cnitool's GC names no valid attachment, so it collects c2 too"
kill $SERVER 2>/dev/null || true
cni del demo /run/netns/c1
cni gc demo /run/netns/c2
CNI_IFNAME=lo cni del loopback /run/netns/c1
CNI_IFNAME=lo cni del loopback /run/netns/c2

bold "9. Nothing is left behind"
say "container veths on the node: $(ip -o link show type veth | grep -v node0 | wc -l)"
say "c2's interfaces: $(ip -n c2 -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')"
say "leases: $(ls /var/lib/cni/networks/demo 2>/dev/null | grep -Ev '^(lock|last_reserved_ip\..*)$' | wc -l)"
say "iptables rules or chains of ours: $( (iptables-save; ip6tables-save) 2>/dev/null | grep -c 'CNIS-' || true)"
say "nftables rules of ours: $(nft list ruleset 2>/dev/null | grep -c 'CNIS-\|cnisuite-' || true)"
ip netns del c1
ip netns del c2
bold "Done: two containers attached, traffic flowed, everything removed."
