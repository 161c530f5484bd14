#!/usr/bin/env bash
# Session 38: the GPU suite on the final binaries (the default --compile-ahead auto, its processes' plans loaded by
# tuning), then Inception V3 run with --check at tf32 and fp16 as the machine's first process of its precision (an
# empty driver JIT cache and kernel cache: the compile-ahead processes start and tuning loads their plans), then
# again from that kernel cache.   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran|compile ahead\]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -10
xz -9 "$o/gpu_tests.log"
for p in tf32 fp16; do
  k=$(mktemp -d)
  for i in 1 2; do
    CUDA_CACHE_PATH=$k/jit timeout 90 build/bin/ios run --model inception_v3 --precision $p --exec auto --iters 500 \
      --check --kernel-cache "$k/kc.json" > "$o/run_iv3_${p}_$i.log" 2>&1
    echo "run $p $i rc $?: $(grep -E 'Latency|Check|^Convolutions' "$o/run_iv3_${p}_$i.log" | cut -c1-520 | tr '\n' ' ')"
  done
  rm -rf "$k"
done
