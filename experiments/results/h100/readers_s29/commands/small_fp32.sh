#!/usr/bin/env bash
# Session 29: every policy on Inception V3, GoogLeNet and SqueezeNet at fp32 with the reader charge, one
# process (exp_latency).
# From the repository root on the GPU machine:  small_fp32.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
timeout 200 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
  --exec staged,dataflow --cost-model measured --precision fp32 --rounds 3 --out-dir "$o/policies_fp32" \
  > "$o/policies_fp32.log" 2>&1
echo "exp_latency fp32 rc $?"
grep -E "^Model" "$o/policies_fp32.log" |
  sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
