#!/usr/bin/env bash
# Session 33: the stage boundary measured behind a head start that grows until the GPU has not reached the first
# span when the last is queued. GPU tests of two workers on one GPU and of the whole-network figures, then NasNet
# fp32 IOS-Both with two workers (twice) and one (session 29's kernel cache file), each schedule run end to end.
#   boundary.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.Sibling*:GpuRuntime.MeasuredCostModelTimesWholeNetworks*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "Failure" -A3 "$o/gpu_tests.log" | head -12
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
for t in w2_1 w1 w2_2; do
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --workers-per-gpu ${t:1:1} --kernel-cache "$o/kc_nasnet.json" \
    --json "$o/nasnet_$t.report.json" > "$o/nasnet_$t.log" 2>&1
  echo "nasnet $t: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall|less the stage boundary, [0-9.]+ us a replay' "$o/nasnet_$t.log" | tr '\n' ' ')"
done
rm -f "$o"/kc_*.json
