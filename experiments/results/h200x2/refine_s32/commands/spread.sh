#!/usr/bin/env bash
# Session 32: NasNet's fp32 IOS-Both search (measured cost model, --no-measure) on one GPU and on all GPUs
# of one host, with 1 and 2 DP workers per GPU, alternated over ROUNDS rounds in one lease; whole-network
# barrier sets timed behind the lane's head start and spread over the GPUs. Kernel choices from session
# 29's H100 cache (on other GPUs a first one-GPU search tunes them). Then Inception V3 tf32 on one GPU
# (the network whose DP set lost to every barrier).   spread.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # tag model precision devices workers-per-gpu [flags]
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model "$2" --opt ios-both --precision "$3" \
    --cost-model measured --quiet ${6:-} --devices "$4" --workers-per-gpu "$5" \
    --kernel-cache "$o/kernel_cache.json" --json "$o/$2_$1.report.json" \
    > "$o/$2_$1.log" 2>&1
  echo "$2 $1 (--devices $4 --workers-per-gpu $5): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$2_$1.log" | tr '\n' ' ')"
  grep -E "^Search time|refined" "$o/$2_$1.log"
}
grep -q "H100" "$o/gpu.txt" || search warmup nasnet fp32 0 1 --no-measure
for r in $(seq 1 "$rounds"); do
  search "one_w1_r$r" nasnet fp32 0 1 --no-measure
  search "all_w1_r$r" nasnet fp32 all 1 --no-measure
  search "one_w2_r$r" nasnet fp32 0 2 --no-measure
  search "all_w2_r$r" nasnet fp32 all 2 --no-measure
done
for r in 1 2; do search "tf32_r$r" inception_v3 tf32 0 1; done
rm -f "$o/kernel_cache.json" "$o"/*.json.tmp
