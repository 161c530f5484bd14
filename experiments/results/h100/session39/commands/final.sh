#!/usr/bin/env bash
# Session 39: the GPU suite on the final binaries, then `ios optimize --stage-marginals` (each stage's cost inside
# the staged network beside its figure) for Inception V3 tf32 IOS-Both and Greedy and GoogLeNet fp16 IOS-Both, each
# network's kernels tuned by a first search.   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|StageMarginals" "$o/gpu_tests.log" | head -10
xz -9 "$o/gpu_tests.log"
for np in inception_v3:tf32:ios-both,greedy googlenet:fp16:ios-both; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for pol in ${policies//,/ }; do
    timeout 300 build/bin/ios optimize --model $net --opt $pol --precision $p --cost-model measured --quiet \
      --kernel-cache "$k" --stage-marginals --json "$o/marginals_${net}_${p}_$pol.json" \
      > "$o/marginals_${net}_${p}_$pol.log" 2>&1
    echo "$net $p $pol rc $?: $(grep -E 'measured / predicted|  sums:' "$o/marginals_${net}_${p}_$pol.log" | cut -c1-200 | tr '\n' ' ')"
  done
  rm -rf "$(dirname "$k")"
done
