#!/bin/bash
# inside sandbox: the CRI row (containerd's RunPodSandbox and Stop+Remove, ours against the floor
# and the reference plugins) with two sets of binaries, alternated, ROUNDS times (RESULTS.md
# round 18: the sitter removed, before and after).
#   A, B: the two binary directories (e.g. a build of an older commit, and bin)
#   ROUNDS: pairs of runs (default 3); later arguments go to every cnibench (-cri 110 -cri-k 10)
#   scripts/sandbox.sh test/bench/profile/cri-ab.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
T=$ROOT/bin/tools
: "${A:?A: the first binaries' directory}" "${B:?B: the second binaries' directory}"
for r in $(seq 1 "${ROUNDS:-3}"); do
	for bin in "$A" "$B"; do
		echo "== round $r: $bin"
		"$T/cnibench" -bin "$bin" -tools "$T" -reference "$T/reference" -cri-only "$@" 2>&1 | grep -E '^\| CRI'
	done
done
