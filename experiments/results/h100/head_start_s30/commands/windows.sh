#!/usr/bin/env bash
# Session 30: Inception V3 tf32 IOS-Both and Greedy searched (stage caches kept) and run staged under CUPTI, for
# experiments/stage_windows.py; kernel choices from session 29's cache.
# From the repository root on the GPU machine:  windows.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
for job in inception_v3:ios-both inception_v3:greedy; do
  net=${job%%:*}; opt=${job##*:}; n=${net}_$opt
  timeout 90 build/bin/ios optimize --model $net --opt $opt --precision tf32 --cost-model measured --quiet \
    --stage-cache "$o/${n}_stages.json" --out "$o/$n.json" > "$o/${n}_search.log" 2>&1
  echo "$n: $(grep -E '^Fidelity:' "$o/${n}_search.log" | cut -c1-170)"
  timeout 60 build/bin/ios run --model $net --precision tf32 --schedule "$o/$n.json" --exec staged --iters 1000 \
    --trace "$o/${n}_trace.json" > "$o/${n}_run.log" 2>&1
  grep -E "^Latency" "$o/${n}_run.log" | cut -c1-100
done
