#!/usr/bin/env bash
# Session 29: Inception V3 IOS-Both searches from an empty kernel cache on a machine just started (the
# first call after the device was given back), tf32 then fp32; then the GPU tests whose helper changed.
# From the repository root on the GPU machine:  fresh_search.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in tf32 fp32; do
  /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --precision $p \
    --cost-model measured --quiet --kernel-cache "$o/kernel_cache.json" --out "$o/inception_v3_$p.json" \
    > "$o/inception_v3_$p.log" 2>&1
  echo "inception_v3 $p: $(grep -E '^Model|^Kernels|^Fidelity:|wall' "$o/inception_v3_$p.log" | cut -c1-160 | tr '\n' ' ')"
done
timeout 120 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.EagerStreams*:GpuRuntime.Prefetching*:GpuRuntime.ALeadKernel*' > "$o/gpu_tests_helper.log" 2>&1
echo "gpu tests rc $?"; grep -E "FAILED|PASSED|Failure" "$o/gpu_tests_helper.log"
