#!/usr/bin/env bash
# Every policy on Inception V3, one exp_latency process per precision (tf32, then fp32), both modes, 3
# interleaved rounds, checked against the CPU reference, kernels tuned from an empty kernel cache. Then the GPU
# suite (the two-GPU tests skip on one GPU).   iv3_policy.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in tf32 fp32; do
  timeout 150 build/bin/exp_latency --model inception_v3 --opt sequential,greedy,ios-both,opara --exec staged,dataflow \
    --precision $p --cost-model measured --kernel-cache "$k/kc.json" --rounds 3 --out-dir "$o/exp_$p" > "$o/exp_$p.log" 2>&1
  echo "exp $p rc $?"; grep -E "^Model|relative L2|error" "$o/exp_$p.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
done
timeout 260 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU suite rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$o/gpu_tests.log" | tr '\n' ' ')"
xz -9 "$o/gpu_tests.log"
