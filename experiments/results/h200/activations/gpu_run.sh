#!/usr/bin/env bash
# GPU check of the activation table: the activation tests and the op matrix in every precision and layout,
# then Inception V3 and SqueezeNet run and checked against the CPU reference.
set -uo pipefail
o=$1; mkdir -p "$o"
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kc.json
timeout 420 build/bin/ios_gpu_tests --gtest_filter='*GpuActivations*:*GpuOps*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Expected|node " "$o/gpu_tests.log" | head -30
for m in squeezenet inception_v3; do
  for p in fp32 fp16; do
    timeout 100 build/bin/ios run --model $m --opt ios-both --cost-model analytic --precision $p --check --iters 50 > "$o/run_${m}_$p.log" 2>&1
    echo "$m $p rc $?: $(grep -E 'Check|Latency' "$o/run_${m}_$p.log" | tr '\n' ' ' | cut -c1-300)"
  done
done
rm -rf "$o"/kc.json*
