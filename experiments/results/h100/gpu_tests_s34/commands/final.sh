#!/usr/bin/env bash
# Session 34, the final binaries: the GPU suite's runtime, kernel-cache, op and every-precision tests; then
# Inception V3 tf32 IOS-Both searched and run staged and dataflow with one CUPTI-traced inference each (where
# the GPU idles inside the graph, issue #14).   final.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:GpuKernelCache*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|kernel cache\]" "$o/gpu_tests.log" | head -20
K=$o/kc.json
timeout 100 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --quiet \
  --kernel-cache "$K" --out "$o/iv3.json" > "$o/search_iv3.log" 2>&1
grep -E "^Fidelity" "$o/search_iv3.log" | cut -c1-160
for m in staged dataflow; do
  timeout 60 build/bin/ios run --schedule "$o/iv3.json" --model inception_v3 --precision tf32 --exec $m --iters 1000 \
    --kernel-cache "$K" --trace "$o/trace_iv3_$m.json" > "$o/trace_iv3_$m.log" 2>&1
  echo "traced $m rc $?: $(grep -oE 'Latency: [0-9.]+ ms' "$o/trace_iv3_$m.log")"
done
rm -rf "$K" "$K.plans"
xz -9 "$o"/trace_*.json
