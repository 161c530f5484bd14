#!/usr/bin/env bash
# Session 28: the GPU suite, and every policy x mode x precision of SqueezeNet and GoogLeNet against the
# CPU reference, with graph-rtc the default at tf32/fp16/bf16 and programmatic edges made full.
# From the repository root on the GPU machine:  gpu_tests.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kernel_cache.json
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*:ConvTuning*' \
  > "$o/gpu_tests_suite.log" 2>&1
echo "suite rc $?"; tail -n 4 "$o/gpu_tests_suite.log"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='*GpuMatchesReference*squeezenet*:*GpuMatchesReference*googlenet*' \
  > "$o/gpu_tests_networks.log" 2>&1
echo "networks rc $?"; tail -n 4 "$o/gpu_tests_networks.log"
