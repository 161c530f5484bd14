#!/usr/bin/env bash
# Session 40: stages timed with every replay's weights cold (',cold-weights', the default rule's rounds and
# tolerance) on the networks whose weights exceed the H100's 50 MB L2 at fp32/tf32, against the default rule:
# predicted against measured end to end and the schedules' measured latencies, main's binary.
#   cold_weights.sh OUT NET:PRECISION:POLICY,POLICY...
set -uo pipefail
o=$1; shift; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
for np in "$@"; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  timeout 300 build/bin/ios optimize --model $net $graphs --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for pol in ${policies//,/ }; do
    for t in cold default; do
      tag=${net}_${p}_${pol}_$t
      timeout 300 build/bin/ios optimize --model $net $graphs --opt $pol --precision $p --cost-model measured \
        --stage-timing $([ $t = default ] && echo adaptive || echo 0/2/2-4/0.05,cold-weights) --kernel-cache "$k" \
        --json "$o/$tag.json" > "$o/$tag.log" 2>&1
      echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|Fidelity: predicted [0-9.]+ ms|measured end to end [0-9.]+ ms|measured / predicted [0-9.]+' "$o/$tag.log" | tr '\n' ' ')"
    done
  done
  rm -rf "$(dirname "$k")"
done
