#!/usr/bin/env bash
# Session 30: search times on a machine just started (the first call after the device was given back):
# Inception V3 IOS-Both from an empty kernel cache at tf32 then fp32 (the machine's first processes), a
# re-search of each with the caches they wrote, then NasNet and RandWire (IOS's graph files under
# build/randwire_graphs) at tf32 from an empty kernel cache; then the GPU test suite.
#   fresh.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # model precision tag cache-tag
  local m=$1 p=$2 tag=$3 cache=$4
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model $m --randwire-graphs build/randwire_graphs \
    --opt ios-both --precision $p --cost-model measured --quiet --kernel-cache "$o/kc_${m}_${p}_$cache.json" \
    --stage-cache "$o/sc_${m}_${p}_$cache.json" --out "$o/${m}_${p}_$tag.json" > "$o/${m}_${p}_$tag.log" 2>&1
  echo "$m $p $tag: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|tuned in [0-9.]+ s|[0-9]+ queued again( \([^)]*\))?|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/${m}_${p}_$tag.log" | tr '\n' ' ')"
}
search inception_v3 tf32 fresh fresh
search inception_v3 fp32 fresh fresh
search inception_v3 tf32 cached fresh
search inception_v3 fp32 cached fresh
search nasnet tf32 fresh fresh
search randwire tf32 fresh fresh
timeout 420 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*:ConvTuning*' \
  > "$o/gpu_tests_suite.log" 2>&1
echo "suite rc $?"; grep -E "FAILED|PASSED|SKIPPED|tests ran" "$o/gpu_tests_suite.log"
