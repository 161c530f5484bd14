#!/usr/bin/env bash
# Session 32 on one H100 just started: Inception V3 tf32 IOS-Both from empty caches (the machine's first
# process: the driver's JIT cache is empty too) and again, then NasNet fp32 twice (kernel choices from
# session 29's H100 cache file), with where the calibration's network build goes; then the GPU tests that
# pack weights in every precision and layout.   h100.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag model precision [kernel cache]
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model "$2" --opt ios-both --precision "$3" \
    --cost-model measured --quiet --kernel-cache "$o/kc_$2.json" --json "$o/$1.report.json" > "$o/$1.log" 2>&1
  echo "$1: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$1.log" | tr '\n' ' ')"
  grep -E "^Search time|^Kernels|refined" "$o/$1.log"
}
search iv3_tf32_first inception_v3 tf32
search iv3_tf32_second inception_v3 tf32
search nasnet_fp32_1 nasnet fp32
search nasnet_fp32_2 nasnet fp32
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:*EveryPrecisionAndLayout*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ') skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests.log")"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
rm -f "$o"/kc_*.json
