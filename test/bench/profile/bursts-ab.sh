#!/bin/bash
# inside sandbox: the 110-at-once bursts of one chain with two sets of binaries, alternated,
# ROUNDS times (RESULTS.md round 13: the lock convoy, before and after).
#   A, B: the two binary directories (e.g. a build of an older commit under /tmp, and bin)
#   CHAIN: the chain (default "default"); ROUNDS: pairs of runs (default 3)
#   PICK: the report lines to keep, an extended regular expression (default: the 110-at-once
#   burst's ADD rows); later arguments override the burst shape (-burst 120 -burst-k 12)
#   Arguments go to every cnibench: run it as
#   bin/tools/cnibench -taskstats-exec scripts/sandbox.sh test/bench/profile/bursts-ab.sh
#   and each burst is also split by process (exit records, -taskstats-fd).
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
T=$ROOT/bin/tools
: "${A:?A: the first binaries' directory}" "${B:?B: the second binaries' directory}"
for r in $(seq 1 "${ROUNDS:-3}"); do
	for bin in "$A" "$B"; do
		echo "== round $r: $bin"
		"$T/cnibench" -bin "$bin" -tools "$T" -bursts-only -backends "${CHAIN:-default}" -burst 0 -burst-all 110 "$@" 2>&1 |
			grep -E "${PICK:-110×110.*ADD phase (÷|by)}"
	done
done
