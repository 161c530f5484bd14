#!/usr/bin/env bash
# Session 32: NasNet's fp32 IOS-Both search (measured cost model, --no-measure) on one GPU and on all GPUs of
# one host, 1 and 2 DP workers per GPU, alternated over ROUNDS rounds in one lease. Kernel choices from session
# 29's H100 cache file (on other GPUs a first one-GPU search tunes them). First the two-GPU calibration test.
#   scaling.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 100 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.TheColdShare*:GpuRuntime.MeasuredCostModelTimesWholeNetworks*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[calibration\]|every barrier|Failure" "$o/gpu_tests.log"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # tag devices workers-per-gpu
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$2" --workers-per-gpu "$3" \
    --kernel-cache "$o/kernel_cache.json" --json "$o/nasnet_$1.report.json" > "$o/nasnet_$1.log" 2>&1
  echo "$1 (--devices $2 --workers-per-gpu $3): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
  grep -E "^Search time|refined" "$o/nasnet_$1.log" | cut -c1-600
}
grep -q "H100" "$o/gpu.txt" || search warmup 0 1
for r in $(seq 1 "$rounds"); do
  search "one_w1_r$r" 0 1
  search "all_w1_r$r" all 1
  search "one_w2_r$r" 0 2
  search "all_w2_r$r" all 2
done
rm -f "$o/kernel_cache.json"
