#!/usr/bin/env bash
# Session 39: each stage's cost inside the network (the staged network's latency less the network's without that
# stage, 7 interleaved rounds of 20 samples of 5 back-to-back replays, median) against the stage's figure
# (IOS_STAGE_MARGINALS=1, after the search's fidelity lines). Kernel cache tuned by a first search.
# marginals.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32:ios-both,greedy,sequential googlenet:fp16:ios-both,greedy,sequential; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" > /dev/null 2>&1
  for pol in ${policies//,/ }; do
    IOS_STAGE_MARGINALS=1 timeout 300 build/bin/ios optimize --model $net --opt $pol --precision $p \
      --cost-model measured --kernel-cache "$k" > "$o/${net}_${p}_$pol.log" 2>&1
    echo "$net $p $pol rc $?: $(grep -oE 'cold share [0-9]+ %|measured / predicted [0-9.]+|MARGINAL sums.*' "$o/${net}_${p}_$pol.log" | tr '\n' ' ')"
  done
  rm -rf "$(dirname "$k")"
done
