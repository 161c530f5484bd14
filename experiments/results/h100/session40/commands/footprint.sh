#!/usr/bin/env bash
# Session 40: the final binaries (stage timing by footprint, the default): GPU tests of the stage timing and cost
# model, then ios optimize on every network at tf32 and Inception V3 at fp32 and fp16 (IOS-Both, Greedy), each
# network's kernels tuned by a first search: the rule chosen, predicted against measured end to end, search time.
#   footprint.sh OUT NET:PRECISION:POLICY,POLICY...
set -uo pipefail
o=$1; shift; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.TheDefaultRule*:GpuRuntime.ColdShare*:GpuRuntime.MeasuredCostModel*:GpuRuntime.TheColdShare*:GpuRuntime.StageMarginals*:GpuRuntime.Screened*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$o/gpu_tests.log" | head
for np in "$@"; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  timeout 300 build/bin/ios optimize --model $net $graphs --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for pol in ${policies//,/ }; do
    tag=${net}_${p}_$pol
    timeout 300 build/bin/ios optimize --model $net $graphs --opt $pol --precision $p --cost-model measured \
      --kernel-cache "$k" --json "$o/$tag.json" > "$o/$tag.log" 2>&1
    echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|L2 flushed and activations read back before each replay|weighed by the cold share|weights, [0-9.]+ MB, [a-z]+|Fidelity: predicted [0-9.]+ ms|measured end to end [0-9.]+ ms|measured / predicted [0-9.]+' "$o/$tag.log" | tr '\n' ' ')"
  done
  rm -rf "$(dirname "$k")"
done
