#!/usr/bin/env bash
# Session 36: Inception V3 and GoogLeNet IOS-Both with weights prefetched into the L2 beside the stage before
# (the fourth mode), fp32 and tf32, one exp_latency process each, the critical-path bound beside.   prefetch.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in fp32 tf32; do
  timeout 250 build/bin/exp_latency --model inception_v3,googlenet --opt greedy,ios-both \
    --exec staged,dataflow,staged+prefetch,dataflow+prefetch --precision $p --cost-model measured \
    --kernel-cache "$k/kc.json" --rounds 3 --out-dir "$o/exp_$p" > "$o/exp_$p.log" 2>&1
  echo "exp $p rc $?"; grep -E "^Model|Critical" "$o/exp_$p.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
done
