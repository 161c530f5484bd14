#!/usr/bin/env bash
# Session 33: NasNet fp32 IOS-Both (measured, --no-measure) on one GPU and on all GPUs of one host, with one and
# two DP workers per GPU (sibling contexts sharing built kernels), alternated over ROUNDS rounds. Kernel choices
# from session 29's H100 cache file, re-tuned by a first one-GPU search on other GPUs.   scaling.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag devices workers-per-gpu
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$2" --workers-per-gpu "$3" \
    --kernel-cache "$o/kc_nasnet.json" --json "$o/nasnet_$1.report.json" > "$o/nasnet_$1.log" 2>&1
  echo "$1 (--devices $2 --workers-per-gpu $3): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_$1.log" | cut -c1-330
}
grep -q "H100" "$o/gpu.txt" || search warmup 0 1
for r in $(seq 1 "$rounds"); do
  search "one_w1_r$r" 0 1
  search "all_w1_r$r" all 1
  search "one_w2_r$r" 0 2
  search "all_w2_r$r" all 2
done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
