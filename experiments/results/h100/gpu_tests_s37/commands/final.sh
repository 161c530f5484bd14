#!/usr/bin/env bash
# Session 37: the GPU suite on the binaries with rt::LosingEngines, then Inception V3 tf32 run twice from one kernel
# cache file, then (VERBOSE=1) Inception V3 and NasNet tf32 searches with every tuning candidate's time, to see how
# the runtime-compiled engine left fares against the precompiled ones.   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -10
xz -9 "$o/gpu_tests.log"
for i in 1 2; do
  timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --exec auto --iters 500 --check \
    --kernel-cache "$k/kc.json" > "$o/run_iv3_$i.log" 2>&1
  echo "run $i rc $?: $(grep -E 'Latency|Check|^Convolutions' "$o/run_iv3_$i.log" | cut -c1-400 | tr '\n' ' ')"
done
if [ "${VERBOSE:-0}" = 1 ]; then
  for net in inception_v3 nasnet; do
    CUDA_CACHE_PATH=$k/jit_$net timeout 120 build/bin/ios optimize --model $net --opt ios-both --precision tf32 \
      --cost-model measured --kernel-cache "$k/kc_$net.json" --verbose --out "$o/${net}_tf32.json" > "$o/search_$net.log" 2>&1
    echo "$net verbose search rc $?: $(grep -E '^Kernels' "$o/search_$net.log" | cut -c1-300)"
    xz -9 "$o/search_$net.log" "$o/${net}_tf32.json"
  done
fi
