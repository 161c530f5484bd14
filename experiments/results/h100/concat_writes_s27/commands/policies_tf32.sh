#!/usr/bin/env bash
# Every policy at tf32 with graph tuning led by runtime-compiled engines on strided slices (session 27),
# each in its fastest mode, one process; the kernel cache of rtc.sh's searches.
# From the repository root on the GPU machine:  policies_tf32.sh OUT KERNEL_CACHE
# Ran on commit 6741f65, where graph tuning led with these engines; since then they are opt-in: to rerun
# with a later binary, add --conv-engine graph-rtc to its ios / exp_latency commands.
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
IOS_KERNEL_CACHE=$2 timeout 300 build/bin/exp_latency --model inception_v3,googlenet,squeezenet \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured \
  --precision tf32 --rounds 3 --out-dir "$o/policies_tf32" 2>&1 | tee "$o/policies_tf32.log" |
  grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|searched" |
  sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-140
