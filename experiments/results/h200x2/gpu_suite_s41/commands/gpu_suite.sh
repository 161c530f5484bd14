#!/usr/bin/env bash
# Session 41: the GPU suite on main's final binary, on a machine of two GPUs so that the two-GPU tests run too.
#   gpu_suite.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 400 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|^\[  SKIPPED \] Gpu" "$o/gpu_tests.log" | head -10
xz -9 "$o/gpu_tests.log"
