#!/usr/bin/env bash
# Session 40: whether the calibration's op figures sit above the search's because the GPU is not yet warm when
# the calibration times them: the sequential network replayed for 2 s before the calibration's timing
# (IOS_CAL_WARM_S=2, commands/cal_warm.diff) against main's order, alternated. Sequential policy: its prediction
# is the search's figures of the same ops the calibration sums.   cal_warm.sh OUT ROUNDS
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 googlenet:fp16; do
  IFS=: read -r net p <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for r in $(seq 1 "$rounds"); do
    for v in 0 2; do
      for pol in sequential ios-both; do
        tag=${net}_${p}_${pol}_warm${v}_$r
        IOS_CAL_WARM_S=$v timeout 200 build/bin/ios optimize --model $net --opt $pol --precision $p \
          --cost-model measured --kernel-cache "$k" > "$o/$tag.log" 2>&1
        echo "$tag rc $?: $(grep -oE 'CALWARM [0-9]+|Latency: [0-9.]+ ms|cold share [0-9]+ %: the ops alone add up to [0-9.]+ ms warm and [0-9.]+ ms cold, the sequential schedule runs [0-9.]+ ms|measured / predicted [0-9.]+' "$o/$tag.log" | tr '\n' ' ')"
      done
    done
  done
  rm -rf "$(dirname "$k")"
done
