#!/usr/bin/env bash
# Session 29: does IOS-Both over-merge where the slices of a merged output are read by convolutions
# (cuDNN's nhwcSliceCKernel before each)? IOS-Both against IOS-Parallel (no merges) and Greedy, one
# process per precision.
# From the repository root on the GPU machine:  merges.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
for p in tf32 fp16; do
  timeout 200 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt ios-both,ios-parallel,greedy \
    --exec staged,dataflow --cost-model measured --precision $p --rounds 3 --out-dir "$o/merges_$p" \
    > "$o/merges_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model" "$o/merges_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
