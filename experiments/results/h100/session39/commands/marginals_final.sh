#!/usr/bin/env bash
# Session 39: the stage-marginals networks on one DeviceStore (weights uploaded once, one arena) with a progress
# line: the GPU test, then `ios optimize --stage-marginals` on Inception V3 tf32 IOS-Both (kernels tuned by a first
# search).   marginals_final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.StageMarginals*' > "$o/gpu_test.log" 2>&1
echo "gpu test rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_test.log" | tr '\n' ' ')"
k=$(mktemp -d)/kc.json
timeout 200 build/bin/ios optimize --model inception_v3 --opt sequential --precision tf32 --cost-model measured \
  --kernel-cache "$k" --quiet > /dev/null 2>&1
timeout 300 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
  --kernel-cache "$k" --stage-marginals --json "$o/marginals_iv3_tf32.json" > "$o/marginals_iv3_tf32.log" 2>&1
echo "rc $?: $(grep -E '^\[stage marginals\]|measured / predicted|  sums:' "$o/marginals_iv3_tf32.log" | cut -c1-200 | tail -12)"
