#!/usr/bin/env bash
# Session 33, final code (executors ask for their kernels at once, built under one hold of the timing lane):
# the runtime's GPU tests, then NasNet fp32 IOS-Both with one and two workers (session 29's kernel cache file).
#   final.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:GpuKernelCache*:*EveryPrecisionAndLayout*:GpuChaos*' \
  > "$o/gpu_tests_final.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests_final.log" | tr '\n' ' ') skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests_final.log")"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests_final.log" | head -20
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
for w in 1 2; do
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --workers-per-gpu $w --kernel-cache "$o/kc_nasnet.json" --json "$o/nasnet_w$w.report.json" \
    > "$o/nasnet_w$w.log" 2>&1
  echo "nasnet w$w: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured end to end [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_w$w.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_w$w.log" | cut -c1-400
done
rm -f "$o"/kc_*.json
