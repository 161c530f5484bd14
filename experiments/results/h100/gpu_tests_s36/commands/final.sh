#!/usr/bin/env bash
# Session 36: the GPU suite on the session's final binaries (kernel cache version 3), then Inception V3 tf32
# searched and run twice from one kernel cache file (the second process tunes nothing).   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 480 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -10
for i in 1 2; do
  timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --exec auto --iters 500 --check \
    --kernel-cache "$k/kc.json" > "$o/run_iv3_$i.log" 2>&1
  echo "run $i rc $?: $(grep -E 'Latency|Check|^Convolutions' "$o/run_iv3_$i.log" | cut -c1-160 | tr '\n' ' ')"
done
xz -9 "$o/gpu_tests.log"
