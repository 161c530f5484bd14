#!/usr/bin/env bash
# Session 39: the cold-share calibration's op figures against the figures the search gives the same single-op
# stages (IOS_DUMP_CALIBRATION=1 prints both, by stage key): Inception V3 tf32 and fp32, GoogLeNet fp16, sequential
# policy, after a search that tuned the kernels.   calibration_ops.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 inception_v3:fp32 googlenet:fp16; do
  IFS=: read -r net p <<< "$np"; k=$(mktemp -d)/kc.json
  for i in 0 1; do
    IOS_DUMP_CALIBRATION=$i timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p \
      --cost-model measured --kernel-cache "$k" > "$o/${net}_${p}_$i.log" 2>&1
    echo "$net $p dump=$i rc $?: $(grep -oE 'cold share [0-9]+ %: [^)]*|measured / predicted [0-9.]+' "$o/${net}_${p}_$i.log" | tr '\n' ' ')"
  done
  rm -rf "$(dirname "$k")"
done
