#!/usr/bin/env bash
# Session 35, second call: workers out of parts lent (build/bin/ios) against 640720c (build/bin/ios_base),
# default two workers per GPU, more rounds; and three workers per GPU (--workers-per-gpu 3) on one GPU and
# on all. NasNet fp32 IOS-Both (measured, --no-measure), kernel choices from session 29's H100 cache file,
# re-tuned by a first one-GPU search.   scaling2.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-3}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag binary devices workers-per-gpu
  /usr/bin/time -f "%e s wall" timeout 150 "$2" optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$3" --workers-per-gpu "$4" \
    --kernel-cache "$o/kc_nasnet.json" --json "$o/nasnet_$1.report.json" > "$o/nasnet_$1.log" 2>&1
  echo "$1 (--devices $3 --workers-per-gpu $4): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_$1.log" | grep -oE "^Search time: [0-9.]+ s policy|busy [0-9., ]+ s|timed [0-9]+ stages for the others in [0-9]+ chunks|[0-9.]+ s dataflow barriers" | tr '\n' ' '; echo
}
new=build/bin/ios base=build/bin/ios_base
search warmup $new 0 2
for r in $(seq 1 "$rounds"); do
  search "all_r$r" $new all 2
  search "all_base_r$r" $base all 2
  search "all_w3_r$r" $new all 3
done
for r in 1 2; do
  search "one_r$r" $new 0 2
  search "one_w3_r$r" $new 0 3
done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
