#!/bin/bash
# inside sandbox: the bursts of one chain on a fresh node, then on a node where the iptables
# chain has run before (its skeleton left in the iptables nat table, as make bench leaves it
# for the bursts), to compare their CPU per pod (RESULTS.md round 12).
#   CHAIN: the chain whose bursts are measured (default "nftables"); BIN: our binaries
#   PERF=1: perf record -a -g each bursts run into /tmp/perf.burst.{fresh,after}.data
#   Arguments go to both bursts runs' cnibench: run it as
#   bin/tools/cnibench -taskstats-exec scripts/sandbox.sh test/bench/profile/burst-state.sh
#   and the bursts are also split by process (exit records, -taskstats-fd).
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${BIN:-$ROOT/bin}; T=$ROOT/bin/tools; CHAIN=${CHAIN:-nftables}
bursts() { # label [cnibench args]
	local label=$1
	shift
	local cmd=("$T/cnibench" -bin "$BIN" -tools "$T" -bursts-only -backends "$CHAIN" -burst 24 -burst-k 6 "$@")
	if [ -n "${PERF:-}" ]; then cmd=(perf record -q -a -g -F 999 -o "/tmp/perf.burst.$label.data" -- "${cmd[@]}"); fi
	echo "== $label"
	"${cmd[@]}" 2>&1 | grep "110×110" | grep "phase ÷\|waited-for\|by process"
}
bursts fresh "$@"
"$T/cnibench" -bin "$BIN" -tools "$T" -seq-only -n 30 -backends iptables >/dev/null 2>&1
bursts after "$@"
