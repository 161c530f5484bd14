#!/usr/bin/env bash
# Session 39: each stage's marginal inside the whole staged network against inside a window of its W neighbours on
# each side (main + commands/marginal_window.diff, IOS_MARGINAL_WINDOW=W): whether Inception V3 tf32's chained
# stages run long only among the whole network. W = 1 and 3; kernels tuned by a first search.   marginal_window.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
k=$(mktemp -d)/kc.json
timeout 200 build/bin/ios optimize --model inception_v3 --opt sequential --precision tf32 --cost-model measured \
  --kernel-cache "$k" --quiet > /dev/null 2>&1
timeout 200 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
  --kernel-cache "$k" --quiet --out "$o/iv3_tf32.json" > "$o/search.log" 2>&1
for w in 1 3; do
  IOS_MARGINAL_WINDOW=$w timeout 250 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 \
    --cost-model measured --kernel-cache "$k" --quiet --stage-marginals > "$o/window_$w.log" 2>&1
  echo "window $w rc $?: $(grep -E '  sums:' "$o/window_$w.log")"
done
