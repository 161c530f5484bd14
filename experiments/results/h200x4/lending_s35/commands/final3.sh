#!/usr/bin/env bash
# Session 35, seventh call: the session's final binary (build/bin/ios, cb2d424: workers out of parts lent,
# the first parts one to each GPU, calibration slots of another GPU timed again) against 640720c
# (build/bin/ios_base). NasNet fp32 IOS-Both (measured, --no-measure, two workers per GPU, kernel choices
# from session 29's H100 cache file re-tuned by a first one-GPU search) on all GPUs, alternated over ROUNDS
# rounds; then the two-GPU calibration GPU tests on this machine.   final3.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-3}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc.json"
search() {  # tag binary devices
  /usr/bin/time -f "%e s wall" timeout 200 "$2" optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$3" \
    --kernel-cache "$o/kc.json" --json "$o/nasnet_$1.report.json" > "$o/nasnet_$1.log" 2>&1
  echo "nasnet $1 (--devices $3): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_$1.log" | grep -oE "^Search time: [0-9.]+ s policy|of it [0-9.]+ s calibrating|[0-9.]+ s dataflow barriers" | tr '\n' ' '; echo
}
new=build/bin/ios base=build/bin/ios_base
search warmup $new 0
for r in $(seq 1 "$rounds"); do
  search "all_r$r" $new all
  search "all_base_r$r" $base all
done
rm -f "$o"/kc*.json "$o"/*.json.tmp
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.TheColdShare*:GpuRuntime.TwoGpus*' > "$o/gpu_tests.log" 2>&1
echo "GPU calibration tests: rc $? $(grep -E '^\[  PASSED|^\[  FAILED|calibration\]' "$o/gpu_tests.log" | tr '\n' ' ')"
