#!/usr/bin/env bash
# Session 30: every policy on DenseNet-121, NasNet and RandWire at tf32 and fp32, staged and dataflow, one
# process per precision (exp_latency), with the head start; kernel choices from session 29's cache.
# From the repository root on the GPU machine:  big_policies.sh OUT   (IOS's RandWire graph files under
# build/randwire_graphs)
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
for p in tf32 fp32; do
  timeout 280 build/bin/exp_latency --model densenet121,nasnet,randwire --randwire-graphs build/randwire_graphs \
    --opt sequential,greedy,ios-both,opara --exec staged,dataflow --cost-model measured --precision $p --rounds 3 \
    --out-dir "$o/policies_$p" > "$o/policies_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model|^Critical" "$o/policies_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
