#!/bin/bash
# inside sandbox: the sequential ADD, CHECK and DEL ratios (× the floor) of two sets of
# binaries, alternated, ROUNDS times (RESULTS.md round 15: a change too small to see).
#   A, B: the two binary directories; ROUNDS (default 3); N (default 200);
#   BACKENDS (default "default,nftables")
#   scripts/sandbox.sh test/bench/profile/seq-ab.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
T=$ROOT/bin/tools
: "${A:?A: the first binaries' directory}" "${B:?B: the second binaries' directory}"
for r in $(seq 1 "${ROUNDS:-3}"); do
	for bin in "$A" "$B"; do
		echo "== round $r: $bin"
		"$T/cnibench" -bin "$bin" -tools "$T" -seq-only -n "${N:-200}" -backends "${BACKENDS:-default,nftables}" 2>&1 |
			grep -E '^\| (default|nftables|iptables) ' | cut -d'|' -f2,5,6,7,8
	done
done
