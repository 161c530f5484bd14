#!/usr/bin/env bash
# Session 35: the GPU suite on the session's last binaries (build/bin/ios_gpu_tests, cb2d424).   suite.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 400 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU suite: rc $? $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' "$o/gpu_tests.log" | tr '\n' ' ')"
xz -9 "$o/gpu_tests.log"
