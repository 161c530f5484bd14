#!/usr/bin/env bash
# Session 30: the warning when the driver's JIT cache is turned off (6954164), on the GPU machine.
set -uo pipefail
CUDA_CACHE_DISABLE=1 timeout 120 build/bin/ios run --model squeezenet --opt sequential --precision tf32 --check --iters 20 \
  --kernel-cache none 2>&1 | head -4
echo "---- fp32 (no runtime-compiled engines, no warning):"
CUDA_CACHE_DISABLE=1 timeout 60 build/bin/ios run --model squeezenet --opt sequential --precision fp32 --iters 20 \
  --kernel-cache none 2>&1 | grep -c warning
echo "---- tests:"
timeout 60 build/bin/ios_gpu_tests --gtest_filter='JitCache*' 2>&1 | tail -2
