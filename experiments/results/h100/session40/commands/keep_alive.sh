#!/usr/bin/env bash
# Session 40: whether stage figures timed with the calibration's executors still alive come out as the network runs:
# IOS_KEEP_NETWORK=1 keeps the calibration's sequential network executor for the rest of the search, IOS_KEEP_OPS=1
# its op executors too (commands/keep_alive.diff); main discards them. Alternated.   keep_alive.sh OUT ROUNDS NET:P...
set -uo pipefail
o=$1; rounds=$2; shift 2; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
for np in "$@"; do
  IFS=: read -r net p <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for r in $(seq 1 "$rounds"); do
    for v in base net all; do
      case $v in base) env="X=1";; net) env="IOS_KEEP_NETWORK=1";; all) env="IOS_KEEP_NETWORK=1 IOS_KEEP_OPS=1";; esac
      for pol in sequential ios-both; do
        tag=${net}_${p}_${pol}_${v}_$r
        env $env timeout 200 build/bin/ios optimize --model $net --opt $pol --precision $p --cost-model measured \
          --kernel-cache "$k" > "$o/$tag.log" 2>&1
        echo "$tag rc $?: $(grep -oE 'Latency: [0-9.]+ ms|cold share [0-9]+ %: the ops alone add up to [0-9.]+ ms warm|runs [0-9.]+ ms end to end|measured / predicted [0-9.]+' "$o/$tag.log" | tr '\n' ' ')"
      done
    done
  done
  rm -rf "$(dirname "$k")"
done
