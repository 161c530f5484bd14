#!/usr/bin/env bash
# Session 37: the final binaries on all the GPUs of one host (2 or 4). The two-GPU calibration
# tests, then NasNet fp32 IOS-Both (measured, --no-measure, kernel choices tuned by a first one-GPU search from an
# empty kernel cache) on all GPUs against one, alternated over ROUNDS rounds.   devices.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.TheColdShare*:GpuRuntime.TwoGpus*' > "$o/gpu_tests.log" 2>&1
echo "GPU two-GPU tests: rc $? $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' "$o/gpu_tests.log" | tr '\n' ' ')"
search() {  # tag devices
  /usr/bin/time -f "%e s wall" timeout 200 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$2" --kernel-cache "$k/kc.json" > "$o/nasnet_$1.log" 2>&1
  echo "nasnet $1 (--devices $2): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
}
search warmup 0
for r in $(seq 1 "$rounds"); do
  search "all_r$r" all
  search "one_r$r" 0
done
