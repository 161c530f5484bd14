#!/usr/bin/env bash
# Session 29: why GoogLeNet tf32's stage sums over-predict (0.845) where Inception V3's do not (1.060):
# searches keeping their stage cache files, then one CUPTI timeline of each schedule run staged, for
# experiments/stage_windows.py (each stage's figure beside its window in the network; figures printed
# here on the CPU by exp_replay --schedule).
# From the repository root on the GPU machine:  stage_windows.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
for job in googlenet:sequential googlenet:ios-both googlenet:greedy inception_v3:ios-both inception_v3:sequential; do
  net=${job%%:*}; opt=${job##*:}; n=${net}_$opt
  timeout 90 build/bin/ios optimize --model $net --opt $opt --precision tf32 --cost-model measured --quiet \
    --stage-cache "$o/${n}_stages.json" --out "$o/$n.json" > "$o/${n}_search.log" 2>&1
  echo "$n: $(grep -E '^Fidelity:' "$o/${n}_search.log" | cut -c1-170)"
  timeout 60 build/bin/ios run --model $net --precision tf32 --schedule "$o/$n.json" --exec staged --iters 1000 \
    --trace "$o/${n}_trace.json" > "$o/${n}_run.log" 2>&1
  grep -E "^Latency" "$o/${n}_run.log" | cut -c1-100
done
