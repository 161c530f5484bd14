#!/usr/bin/env bash
# Session 28: merged launches write their concatenation in place. SqueezeNet tf32's IOS-Both and Greedy
# schedules of squeezenet_policies.sh, run alternating (staged and dataflow, --check) at every precision;
# SqueezeNet every policy at tf32 (exp_latency, measured searches); the GPU tests that run merged
# convolutions and SqueezeNet against the reference.
# From the repository root on the GPU machine:  merged_concat.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
s=experiments/results/h100/pdl_s28/sqp
cp $s/kernel_cache.json "$o/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in tf32 fp16 bf16 fp32; do
  for rep in 1 2; do
    for opt in ios-both greedy; do
      tag=squeezenet_${opt}_${p}_$rep
      timeout 60 build/bin/ios run --model squeezenet --schedule $s/squeezenet_$opt.json --precision $p --exec auto \
        --kernel-cache "$o/kernel_cache.json" --check --iters 500 > "$o/$tag.log" 2>&1
      echo "$tag: $(grep -E '^Exec auto|^Latency|^Check|^Convolutions' "$o/$tag.log" | cut -c1-150 | tr '\n' ' ')"
    done
  done
done
IOS_KERNEL_CACHE=$o/kernel_cache.json timeout 150 build/bin/exp_latency --model squeezenet \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow --cost-model measured \
  --precision tf32 --rounds 3 --out-dir "$o/policies_tf32" > "$o/policies_tf32.log" 2>&1
echo "exp_latency rc $?"
grep -E "^Model|searched" "$o/policies_tf32.log" |
  sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-160
timeout 200 build/bin/ios_gpu_tests --gtest_filter='*GpuMatchesReference*squeezenet*:GpuRuntime.ExecutorsOnOneStore*:GpuRuntime.EagerStreams*:GpuChaos*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?"; tail -n 3 "$o/gpu_tests.log"
