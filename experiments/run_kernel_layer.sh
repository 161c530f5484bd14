#!/usr/bin/env bash
# The kernel-layer GPU checks in one device call: op matrix, kernel cache across processes, then
# `ios run` of Inception V3 / GoogLeNet sequential in every precision and both conv engines.
# Usage (on the GPU machine, from the repository root, binaries in build/bin): run_kernel_layer.sh OUT_DIR
set -uo pipefail
out=${1:-experiments/results/latest}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$out/gpu.txt"
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuKernelCache*:GpuRuntime*' 2>&1 | tee "$out/gpu_tests_ops.log" | tail -40
for model in googlenet inception_v3; do
  for p in fp32 tf32 fp16 bf16; do
    for engine in graph legacy; do
      timeout 120 build/bin/ios run --model "$model" --opt sequential --precision "$p" --conv-engine "$engine" \
        --check --verbose --iters 200 2>&1 | tee -a "$out/ios_run.log" | grep -E "Latency|Check|Convolutions|error"
    done
  done
done
