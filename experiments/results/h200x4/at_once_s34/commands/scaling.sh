#!/usr/bin/env bash
# Session 34: executors asking for all their convolution kernels at once (built under one hold of the GPU's
# timing lane) with the stage boundary behind a growing head start, against b8d5bc5 (build/bin/ios_base: one
# hold per kernel). NasNet fp32 IOS-Both (measured, --no-measure) on one GPU and on all GPUs of one host,
# one and two DP workers per GPU, alternated over ROUNDS rounds. Kernel choices from session 29's H100 cache
# file, re-tuned by a first one-GPU search.   scaling.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag binary devices workers-per-gpu
  /usr/bin/time -f "%e s wall" timeout 150 "$2" optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$3" --workers-per-gpu "$4" \
    --kernel-cache "$o/kc_nasnet.json" --json "$o/nasnet_$1.report.json" > "$o/nasnet_$1.log" 2>&1
  echo "$1 (--devices $3 --workers-per-gpu $4): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_$1.log" | grep -oE "of it [0-9.]+ s calibrating[^)]*\)|[0-9.]+ s dataflow barriers|less the stage boundary, [0-9.]+ us" | tr '\n' ' '; echo
  grep -oE "less the stage boundary, [0-9.]+ us a replay" "$o/nasnet_$1.log"
}
new=build/bin/ios base=build/bin/ios_base
search warmup $new 0 1
for r in $(seq 1 "$rounds"); do
  search "one_w2_r$r" $new 0 2
  search "all_w2_r$r" $new all 2
  search "all_w2_base_r$r" $base all 2
  search "one_w1_r$r" $new 0 1
  search "all_w1_r$r" $new all 1
done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
