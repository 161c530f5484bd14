#!/usr/bin/env bash
# Session 35, fourth call, the final binaries: only workers on other GPUs lent, and the first parts one
# to each GPU (build/bin/ios), against 640720c (build/bin/ios_base). RandWire and NasNet fp32 IOS-Both
# (measured, --no-measure, two workers per GPU, kernel choices from session 29's H100 cache file, re-tuned
# by a first one-GPU search), alternated; then the GPU suite.   final.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc.json"
search() {  # model tag binary devices
  local extra=()
  [ "$1" = randwire ] && extra=(--randwire-graphs build/randwire_graphs)
  /usr/bin/time -f "%e s wall" timeout 200 "$3" optimize --model "$1" "${extra[@]}" \
    --opt ios-both --precision fp32 --cost-model measured --quiet --no-measure --devices "$4" \
    --kernel-cache "$o/kc.json" --json "$o/$1_$2.report.json" > "$o/$1_$2.log" 2>&1
  echo "$1 $2 (--devices $4): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/$1_$2.log" | grep -oE "^Search time: [0-9.]+ s policy|busy [0-9., ]+ s|timed [0-9]+ stages for the others in [0-9]+ chunks|[0-9.]+ s dataflow barriers" | tr '\n' ' '; echo
}
new=build/bin/ios base=build/bin/ios_base
search randwire warmup $new 0
search nasnet warmup $new 0
for r in 1 2; do
  search randwire "all_r$r" $new all
  search randwire "all_base_r$r" $base all
done
search randwire one_r1 $new 0
search randwire one_base_r1 $base 0
for r in 1 2; do
  search nasnet "all_r$r" $new all
  search nasnet "all_base_r$r" $base all
done
search nasnet one_r1 $new 0
rm -f "$o"/kc*.json "$o"/*.json.tmp
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:GpuKernelCache*:GpuCompileAhead*:*EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU suite: rc $? $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' "$o/gpu_tests.log" | tr '\n' ' ')"
xz -9 "$o/gpu_tests.log"
