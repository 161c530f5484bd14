#!/usr/bin/env bash
# Session 40: why the cold-share calibration's warm op figures sit ~0.5 us an op above the search's figures for the
# same single-op stages at Inception V3 tf32 (session 39 run5). IOS_DUMP_ROUNDS=1 prints every round of both
# (CALR: calibration pass of many ops; DPR: search pass, its size); IOS_CAL_SMALL_PASSES=N times the calibration's
# ops again in passes of N as the search does (commands/small_passes.diff). Then IOS-Both / Greedy / Sequential
# with the calibration in passes of 2 against main's, alternated.   small_passes.sh OUT ROUNDS
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
line() { echo "$1 rc $2: $(grep -oE 'Optimization cost: [0-9.]+ sec|cold share [0-9]+ %: the ops alone add up to [0-9.]+ ms warm and [0-9.]+ ms cold, the sequential schedule runs [0-9.]+ ms|measured / predicted [0-9.]+' "$o/$1.log" | tr '\n' ' ')"; }
for np in inception_v3:tf32:ios-both,greedy,sequential googlenet:fp16:ios-both inception_v3:fp32:ios-both; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for v in dump small1 small2; do
    tag=${net}_${p}_sequential_$v
    case $v in dump) env=IOS_DUMP_ROUNDS=1;; small1) env="IOS_DUMP_ROUNDS=1 IOS_CAL_SMALL_PASSES=1";; small2) env="IOS_DUMP_ROUNDS=1 IOS_CAL_SMALL_PASSES=2";; esac
    env $env timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
      --kernel-cache "$k" > "$o/$tag.log" 2>&1
    line $tag $?
  done
  for r in $(seq 1 "$rounds"); do
    for v in base small2; do
      for pol in ${policies//,/ }; do
        tag=${net}_${p}_${pol}_${v}_$r
        env $([ $v = small2 ] && echo IOS_CAL_SMALL_PASSES=2 || echo X=1) timeout 200 build/bin/ios optimize \
          --model $net --opt $pol --precision $p --cost-model measured --kernel-cache "$k" \
          --json "$o/$tag.json" > "$o/$tag.log" 2>&1
        line $tag $?
      done
    done
  done
  rm -rf "$(dirname "$k")"
done
