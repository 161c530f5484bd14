#!/usr/bin/env bash
# Session 40: predicted (the stages' sum scaled by the sequential schedule measured / summed, sched::network_scale)
# against measured end to end, per network, precision and policy, each network's kernels tuned by a first search.
# Prints both ratios: over the scaled prediction and over the bare sum.
#   fidelity.sh OUT ROUNDS NET:PRECISION:POLICY,POLICY... [more]
set -uo pipefail
o=$1; rounds=$2; shift 2; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
for np in "$@"; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  timeout 300 build/bin/ios optimize --model $net $graphs --opt sequential --precision $p --cost-model measured \
    --kernel-cache "$k" --quiet > /dev/null 2>&1
  for r in $(seq 1 "$rounds"); do
    for pol in ${policies//,/ }; do
      tag=${net}_${p}_${pol}_$r
      timeout 300 build/bin/ios optimize --model $net $graphs --opt $pol --precision $p --cost-model measured \
        --kernel-cache "$k" --json "$o/$tag.json" > "$o/$tag.log" 2>&1
      echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|predictions scaled by [0-9.]+|measured / predicted [0-9.]+ \(over the sum [0-9.]+\)' "$o/$tag.log" | tr '\n' ' ')"
    done
  done
  rm -rf "$(dirname "$k")"
done
