#!/bin/bash
# The soak: CYCLES pods (default 1,000) through the chain bridge (ipMasq,
# hairpin, host-local) → portmap (two host ports) → tuning, PAR at a time
# (default 8), as a runtime drives them (cnitool: ADD, then DEL until it
# succeeds, as runtimes retry it), while
#   - a killer SIGKILLs a random plugin process of ours every KILL_MS
#     (default 150) milliseconds (bridge, host-local, portmap, tuning, the
#     repair helpers; never anything this script did not start),
#   - the ruleset is flushed (nft flush ruleset) every FLUSH_S (default 5)
#     seconds,
#   - `cnisuite watch` runs (its safety net every 10 s), repairing after
#     each flush.
# One call in four also has one of the plugin processes it started
# SIGKILLed after 0-50 ms. A pod whose ADD failed or was killed is deleted
# all the same, as a runtime does. At the end the watcher is stopped and the summary counts
# what is left of every kind: veths, leases, rules naming pod addresses,
# host port claims, records, sysctl holds, temporary files, result cache
# entries, processes, network namespaces. Every count should be 0; the
# exit status says whether they are.
#
#   make soak                                    (builds, then runs this in the sandbox)
#   scripts/sandbox.sh test/soak/soak.sh BIN     (BIN: our plugins, with tools/cnitool)
#
# Environment: CYCLES, PAR, KILL_MS, FLUSH_S, BACKEND (empty: the node's
# choice; iptables or nftables).
set -uo pipefail
BIN=${1:?usage: soak.sh BIN}
BIN=$(cd "$BIN" && pwd)
CYCLES=${CYCLES:-1000} PAR=${PAR:-8} KILL_MS=${KILL_MS:-150} FLUSH_S=${FLUSH_S:-5} BACKEND=${BACKEND:-}
[ "${CNISUITE_SANDBOX:-}" = 1 ] || { echo "soak: run me inside scripts/sandbox.sh" >&2; exit 1; }
W=${TMPDIR:-/tmp}/soak
mkdir -p "$W/conf" "$W/log"
SELF=$$

keys="" pkeys=""
if [ -n "$BACKEND" ]; then keys="\"ipMasqBackend\":\"$BACKEND\"," pkeys="\"backend\":\"$BACKEND\","; fi
cat >"$W/conf/10-soak.conflist" <<J
{"cniVersion":"1.1.0","name":"soak","plugins":[
 {"type":"bridge","bridge":"soak0","isGateway":true,"isDefaultGateway":true,"ipMasq":true,"hairpinMode":true,$keys
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.250.0.0/16"}]]}},
 {"type":"portmap",$pkeys"capabilities":{"portMappings":true}},
 {"type":"tuning","sysctl":{"net.core.somaxconn":"512"}}]}
J
export NETCONFPATH=$W/conf CNI_PATH=$BIN
ip link set lo up
sysctl -qw net.ipv4.ip_forward=1

# mine PID: whether PID descends from this script (so that the killer never
# touches a process it did not start). No process started: the killer
# must be quick, a plugin lives for milliseconds.
mine() {
	local p=$1 k v
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		[ "$p" = "$SELF" ] && return 0
		local next=
		{ while read -r k v; do
			[ "$k" = PPid: ] && next=$v && break
		done <"/proc/$p/status"; } 2>/dev/null
		p=$next
	done
	return 1
}

# killer: every KILL_MS, SIGKILL one random process of ours running one
# of the plugin binaries (cnisuite watch itself spared).
killer() {
	local kills=0 pause
	pause=$(awk -v ms="$KILL_MS" 'BEGIN {printf "%.3f", ms/1000}')
	while sleep "$pause"; do
		local pids=()
		mapfile -t pids < <(find /proc -mindepth 2 -maxdepth 2 -name exe \( -lname "$BIN/bridge" -o -lname "$BIN/host-local" \
			-o -lname "$BIN/portmap" -o -lname "$BIN/tuning" \) 2>/dev/null | cut -d/ -f3)
		[ "${#pids[@]}" -gt 0 ] || continue
		local pid=${pids[RANDOM % ${#pids[@]}]}
		if mine "$pid" && kill -KILL "$pid" 2>/dev/null; then
			kills=$((kills + 1))
			echo "$kills" >"$W/kills"
		fi
	done
}

flusher() {
	local n=0
	while sleep "$FLUSH_S"; do
		nft flush ruleset && n=$((n + 1)) && echo "$n" >"$W/flushes"
	done
}

# cni VERB NS PORT LOG: one cnitool call; one in four has a plugin process
# it started SIGKILLed after 0-50 ms (when one is running then).
cni() {
	local verb=$1 ns=$2 port=$3 log=$4
	CAP_ARGS="{\"portMappings\":[{\"hostPort\":$port,\"containerPort\":80,\"protocol\":\"tcp\"},{\"hostPort\":$((port + 1)),\"containerPort\":53,\"protocol\":\"udp\"}]}" \
		"$BIN/tools/cnitool" "$verb" soak "/run/netns/$ns" >"$log" 2>&1 &
	local pid=$!
	if ((RANDOM % 4 == 0)); then
		sleep "$(printf '0.%03d' $((RANDOM % 50)))"
		local children=()
		{ read -r -a children <"/proc/$pid/task/$pid/children"; } 2>/dev/null # gone: nothing to kill
		if [ "${#children[@]}" -gt 0 ] && kill -KILL "${children[RANDOM % ${#children[@]}]}" 2>/dev/null; then
			echo "$verb" >>"$W/call-kills"
		fi
	fi
	wait "$pid"
}

# pod I: ADD (killed or failed: no matter), then DEL until it succeeds (at
# most 20 tries), as a runtime does.
pod() {
	local i=$1 ns=soak$1 port=$((20000 + 2 * ($1 % 10000)))
	ip netns add "$ns" || return
	cni add "$ns" "$port" "$W/log/add$i" || echo "$i" >>"$W/add-failed"
	local try
	for try in $(seq 1 20); do
		if cni del "$ns" "$port" "$W/log/del$i"; then
			[ "$try" = 1 ] || echo "$i $try" >>"$W/del-retried"
			ip netns del "$ns"
			rm -f "$W/log/add$i" "$W/log/del$i"
			return
		fi
	done
	echo "$i" >>"$W/del-failed"
	ip netns del "$ns"
}

CNISUITE_WATCH_SAFETY_INTERVAL=10s "$BIN/cnisuite" watch >"$W/watch.log" 2>&1 &
WATCH=$!
killer &
KILLER=$!
flusher &
FLUSHER=$!
start=$(date +%s)
for ((i = 1; i <= CYCLES; i++)); do
	pod "$i" &
	while [ "$(jobs -rp | wc -l)" -ge $((PAR + 3)) ]; do wait -n; done
	((i % 100 == 0)) && echo "soak: $i of $CYCLES pods started, $(($(date +%s) - start)) s"
done
while [ "$(jobs -rp | wc -l)" -gt 3 ]; do wait -n; done
kill "$KILLER" "$FLUSHER"
wait "$KILLER" "$FLUSHER" 2>/dev/null
sleep 3 # the watcher's last repair after the last flush
kill "$WATCH"
wait "$WATCH" 2>/dev/null
end=$(date +%s)

# count WHAT LINES...: one line of the summary, and what is left, if any.
left=0
count() {
	local what=$1
	shift
	local n=$#
	left=$((left + n))
	printf '  %-34s %d\n' "$what" "$n"
	[ "$n" = 0 ] || printf '      %s\n' "$@" | head -5
}
mapfile -t veths < <(ip -o link show type veth | awk -F': ' '{print $2}')
mapfile -t bridges < <(ip -o link show type bridge | awk -F': ' '{print $2}')
mapfile -t leases < <(find /var/lib/cni/networks -type f -name '10.250.*' 2>/dev/null)
mapfile -t rules < <({ nft list ruleset; iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } |
	grep -E '10\.250\.[0-9]+\.[0-9]+' | grep -vE '10\.250\.0\.0/16' | sed 's/^[[:space:]]*//')
mapfile -t claims < <(find /run/cnisuite/fw-backend -path '*hostports*' -type f ! -name .lock 2>/dev/null)
mapfile -t records < <(find /run/cnisuite/records -type f -name '*.json' 2>/dev/null)
mapfile -t holds < <({ find /run/cnisuite/sysctl-holds -type f ! -name .lock 2>/dev/null; grep -H . /run/sysctl.d/zz-cnisuite.conf 2>/dev/null; })
mapfile -t temps < <(find /run/cnisuite /var/lib/cni /run/sysctl.d -name '.tmp-*' -o -name '*.tmp' 2>/dev/null)
mapfile -t results < <(find /var/lib/cni/results -type f 2>/dev/null)
mapfile -t procs < <(for d in /proc/[0-9]*; do
	exe=$(readlink "$d/exe" 2>/dev/null) || continue
	case $exe in "$BIN"/*) echo "${d#/proc/} $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" ;; esac
done)
mapfile -t netns < <(ip netns list)
echo "soak summary: $CYCLES pods, $PAR at a time, $((end - start)) s; backend '${BACKEND:-node choice}'"
echo "  kills: $(cat "$W/call-kills" 2>/dev/null | wc -l) of a call's plugin, $(cat "$W/kills" 2>/dev/null || echo 0) at random; flushes $(cat "$W/flushes" 2>/dev/null || echo 0)," \
	"ADDs failed or killed $(cat "$W/add-failed" 2>/dev/null | wc -l)," \
	"DELs retried $(cat "$W/del-retried" 2>/dev/null | wc -l)," \
	"repairs logged $(grep -c repaired "$W/watch.log")"
echo " leftovers:"
mapfile -t undeleted < <(cat "$W/del-failed" 2>/dev/null)
count "pods whose DEL never succeeded" "${undeleted[@]}"
count "veths" "${veths[@]}"
count "leases" "${leases[@]}"
count "rules naming pod addresses" "${rules[@]}"
count "host port claims" "${claims[@]}"
count "records" "${records[@]}"
count "sysctl holds" "${holds[@]}"
count "temporary files" "${temps[@]}"
count "result cache entries" "${results[@]}"
count "processes" "${procs[@]}"
count "network namespaces" "${netns[@]}"
echo "  (bridges, kept by design without removeEmptyBridge: ${bridges[*]:-none})"
for f in "$W"/log/del*; do
	[ -e "$f" ] && { echo "last error of ${f##*/}:"; tail -c 400 "$f"; echo; }
done | head -40
echo "leftovers in all: $left"
[ "$left" = 0 ]
