#!/bin/bash
# inside sandbox: the CRI row (containerd's RunPodSandbox and Stop+Remove, ours against the floor
# and the reference plugins) with several sets of binaries, ROUNDS times, in the order given on
# odd rounds and the reverse on even ones, so that a drift of the machine's load weighs on each
# set alike (RESULTS.md round 18: the sitter and the second JSON reader removed).
#   BINS: the binary directories, space-separated (e.g. builds of older commits, and bin)
#   ROUNDS: rounds (default 4); later arguments go to every cnibench (-cri 110 -cri-k 10)
#   BINS="/tmp/a/bin bin" scripts/sandbox.sh test/bench/profile/cri-ab.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
T=$ROOT/bin/tools
: "${BINS:?BINS: the binary directories}"
read -r -a bins <<<"$BINS"
for r in $(seq 1 "${ROUNDS:-4}"); do
	order=("${bins[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#bins[@]} - 1; i >= 0; i--)); do order+=("${bins[i]}"); done
	fi
	for bin in "${order[@]}"; do
		echo "== round $r: $bin"
		"$T/cnibench" -bin "$bin" -tools "$T" -reference "$T/reference" -cri-only "$@" 2>&1 | grep -E '^\| CRI'
	done
done
