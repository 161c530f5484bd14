#!/usr/bin/env bash
# Session 37, second call on the same 4 x H200: NasNet fp32 IOS-Both (as devices.sh) on all GPUs with one DP worker
# per GPU, against one GPU with one worker and with the default two, alternated over ROUNDS rounds.
#   workers.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"; k=$(mktemp -d)
search() {  # tag devices workers-per-gpu (empty: the default)
  local w=""; [ -n "$3" ] && w="--workers-per-gpu $3"
  /usr/bin/time -f "%e s wall" timeout 200 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$2" $w --kernel-cache "$k/kc.json" > "$o/nasnet_$1.log" 2>&1
  echo "nasnet $1 (--devices $2 ${w:-default workers}): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
}
search warmup 0 ""
for r in $(seq 1 "$rounds"); do
  search "all_w1_r$r" all 1
  search "one_w1_r$r" 0 1
  search "one_r$r" 0 ""
done
