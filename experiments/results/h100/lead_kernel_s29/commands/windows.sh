#!/usr/bin/env bash
# Session 29: each stage's figure beside its window in the network with the lead-kernel figures
# (experiments/stage_windows.py): Inception V3 (staged prediction 1.128 of its run) and GoogLeNet at tf32.
# From the repository root on the GPU machine:  windows.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
for job in inception_v3:ios-both inception_v3:greedy googlenet:ios-both; do
  net=${job%%:*}; opt=${job##*:}; n=${net}_$opt
  timeout 90 build/bin/ios optimize --model $net --opt $opt --precision tf32 --cost-model measured --quiet \
    --stage-cache "$o/${n}_stages.json" --out "$o/$n.json" > "$o/${n}_search.log" 2>&1
  echo "$n: $(grep -E '^Fidelity:' "$o/${n}_search.log" | cut -c1-170)"
  timeout 60 build/bin/ios run --model $net --precision tf32 --schedule "$o/$n.json" --exec staged --iters 1000 \
    --trace "$o/${n}_trace.json" > "$o/${n}_run.log" 2>&1
  grep -E "^Latency" "$o/${n}_run.log" | cut -c1-100
done
