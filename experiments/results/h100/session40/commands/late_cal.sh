#!/usr/bin/env bash
# Session 40: after a search (and its fidelity run), IOS_LATE_CAL=1 (commands/late_cal.diff) prints the sequential
# schedule's ops summed four ways: the calibration's warm figures from the search's start, the search's figures (stage
# cache), the same stages timed again now one at a time as the search times them, and the calibration's timing
# (all ops and the network in one pass) run again now.   late_cal.sh OUT ROUNDS
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 googlenet:fp16; do
  IFS=: read -r net p <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for r in $(seq 1 "$rounds"); do
    for pol in sequential ios-both; do
      tag=${net}_${p}_${pol}_$r
      IOS_LATE_CAL=1 timeout 200 build/bin/ios optimize --model $net --opt $pol --precision $p \
        --cost-model measured --kernel-cache "$k" > "$o/$tag.log" 2>&1
      echo "$tag rc $?: $(grep -oE 'cold share [0-9]+ %|measured / predicted [0-9.]+|LATE .*' "$o/$tag.log" | tr '\n' ' ')"
    done
  done
  rm -rf "$(dirname "$k")"
done
