#!/usr/bin/env bash
# Session 34 review: after list_candidates / kernel_cache_key were factored out and plan files named by
# sched::signature_hash, the GPU tests of tuning, the kernel cache and compile-ahead.   review.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuCompileAhead*:GpuOps*:GpuRuntime.MeasuredCostModel*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran|compile ahead\]|kernel cache\]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -20
