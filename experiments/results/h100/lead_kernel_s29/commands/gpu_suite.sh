#!/usr/bin/env bash
# Session 29: the GPU suite after the lead kernel and the merge copies (commit 4f76acd's ios_gpu_tests).
# From the repository root on the GPU machine:  gpu_suite.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$IOS_KERNEL_CACHE"
timeout 420 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*:ConvTuning*' \
  > "$o/gpu_tests_suite.log" 2>&1
echo "suite rc $?"; grep -E "FAILED|PASSED|SKIPPED|tests ran" "$o/gpu_tests_suite.log"
timeout 150 build/bin/ios_gpu_tests --gtest_filter='*GpuMatchesReference*inception_v3*' > "$o/gpu_tests_iv3.log" 2>&1
echo "inception_v3 rc $?"; grep -E "FAILED|PASSED|tests ran" "$o/gpu_tests_iv3.log"
