#!/usr/bin/env bash
# Session 39: `ios optimize --stage-marginals` for Inception V3 IOS-Both at fp32 (NCHW) and fp16, beside run10/run11's
# tf32: whether its chained-convolution stages stand out at every precision. Kernels tuned by a first search.
# marginals_precisions.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in fp32 fp16; do
  k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model inception_v3 --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  timeout 300 build/bin/ios optimize --model inception_v3 --opt ios-both --precision $p --cost-model measured \
    --kernel-cache "$k" --stage-marginals --json "$o/marginals_iv3_$p.json" > "$o/marginals_iv3_$p.log" 2>&1
  echo "$p rc $?: $(grep -E 'measured / predicted|  sums:' "$o/marginals_iv3_$p.log" | cut -c1-200 | tr '\n' ' ')"
  rm -rf "$(dirname "$k")"
done
