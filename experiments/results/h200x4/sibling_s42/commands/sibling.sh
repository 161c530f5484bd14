#!/usr/bin/env bash
# Session 42: a worker out of parts helps its own GPU's sibling with requests of 32 stages or more
# (attempt/sibling-help, build/bin/ios) against main (faa8fc4, build/bin/ios_base), on all the GPUs of one
# host and on one. IOS-Both fp32, measured, --no-measure, kernel choices tuned by a first one-GPU search.
#   sibling.sh OUT NET:ROUNDS...
set -uo pipefail
o=$1; shift; mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for nr in "$@"; do
  IFS=: read -r net rounds <<< "$nr"
  k=$(mktemp -d); graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  search() {  # tag binary devices
    /usr/bin/time -f "%e s wall" timeout 120 build/bin/$2 optimize --model $net $graphs --opt ios-both --precision fp32 \
      --cost-model measured --quiet --no-measure --devices "$3" --kernel-cache "$k/kc.json" --json "$o/${net}_$1.json" \
      > "$o/${net}_$1.log" 2>&1
    echo "$net $1 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|Stages: [0-9]+|[0-9]+ stages costed|[0-9.]+ s dataflow barriers|[0-9.]+ s wall' "$o/${net}_$1.log" | tr '\n' ' ')"
  }
  search warmup ios_base 0
  for r in $(seq 1 "$rounds"); do
    search "new_all_r$r" ios all
    search "base_all_r$r" ios_base all
    search "new_one_r$r" ios 0
    search "base_one_r$r" ios_base 0
  done
  rm -rf "$k"
done
