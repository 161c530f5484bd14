#!/usr/bin/env bash
# Session 40: the cold share calibrated on the sequential schedule's ops (main) against greedy's concurrent stages
# (IOS_CAL_SCHEDULE=greedy, commands/cal_schedule.diff): predicted (stage sums) against measured end to end, per
# network and policy, alternated. First the GPU test of session 39's review commit.   cal_schedule.sh OUT ROUNDS
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.StageMarginals*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
for np in inception_v3:tf32:ios-both,greedy,sequential inception_v3:fp32:ios-both googlenet:tf32:ios-both \
          squeezenet:tf32:ios-both nasnet:tf32:ios-both; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for r in $(seq 1 "$rounds"); do
    for v in base greedy; do
      for pol in ${policies//,/ }; do
        tag=${net}_${p}_${pol}_${v}_$r
        IOS_CAL_SCHEDULE=$([ $v = greedy ] && echo greedy || echo sequential) timeout 200 build/bin/ios optimize \
          --model $net --opt $pol --precision $p --cost-model measured --kernel-cache "$k" \
          --json "$o/$tag.json" > "$o/$tag.log" 2>&1
        echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|cold share [0-9]+ %|measured / predicted [0-9.]+' "$o/$tag.log" | tr '\n' ' ')"
      done
    done
  done
  rm -rf "$(dirname "$k")"
done
