#!/usr/bin/env bash
# Session 42: requests shared out in shrinking pieces (guided self-scheduling, build/bin/ios) against one piece
# per taker cut at the start, with sibling help (build/bin/ios_sib, 0d29ea9 on attempt/sibling-help) and against
# main (build/bin/ios_base, faa8fc4), on all the GPUs of one host and on one, alternated. IOS-Both fp32,
# measured, --no-measure, kernel choices tuned by a first one-GPU search.   pieces.sh OUT NET:ROUNDS...
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
    echo "$net $1 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|Stages: [0-9]+|[0-9]+ stages costed|timed [0-9]+ stages for the others in [0-9]+ chunks|[0-9.]+ s wall' "$o/${net}_$1.log" | tr '\n' ' ')"
  }
  search warmup ios_base 0
  for r in $(seq 1 "$rounds"); do
    for d in all one; do
      for b in ios ios_sib ios_base; do search "${b}_${d}_r$r" $b $([ $d = all ] && echo all || echo 0); done
    done
  done
  rm -rf "$k"
done
