#!/usr/bin/env bash
# Session 39: predicted (stage sums) against measured end to end for three schedules of a network, their stages
# timed under the default rule (warm replays weighed by the calibrated cold share) and with every replay's weights
# cold (the default's rounds and tolerance, ',cold-weights'): whether wide stages' weights, cold in the network,
# are what the warm figures miss.   cold_weights.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 googlenet:fp16; do
  net=${np%:*}; p=${np#*:}; k=$(mktemp -d)/kc.json
  for opt in ios-both greedy sequential; do
    for t in default 0/2/2-4/0.05,cold-weights; do
      tag=${net}_${p}_${opt}_${t%%/*}
      timeout 150 build/bin/ios optimize --model $net --opt $opt --precision $p --cost-model measured \
        --stage-timing $([ $t = default ] && echo adaptive || echo $t) --kernel-cache "$k" \
        --json "$o/$tag.json" > "$o/search_$tag.log" 2>&1
      echo "$net $p $opt $t rc $?: $(grep -E '^Fidelity' "$o/search_$tag.log" | cut -c1-300 | tr '\n' ' ')"
    done
  done
  rm -rf "$(dirname "$k")"
done
