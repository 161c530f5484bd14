#!/usr/bin/env bash
# Session 39: warm stage rounds behind an untimed replay of their own stage (new, build/bin/ios) against main
# (base, build/bin/ios_base, whose warm rounds follow the stage timed before). Searches alternated over ROUNDS
# rounds, each network's kernel cache shared by both (tuned by a first search, not counted); each search's
# fidelity lines and cold-share calibration.   warm_behind.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # variant net precision policy tag kernel-cache
  local bin=build/bin/ios; [ "$1" = base ] && bin=build/bin/ios_base
  timeout 200 $bin optimize --model $2 --opt $4 --precision $3 --cost-model measured --kernel-cache "$6" \
    --json "$o/$5.json" --out "$o/$5_schedule.json" > "$o/$5.log" 2>&1
  echo "$5 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|cold share [0-9]+ %: [^)]*|measured / predicted [0-9.]+' "$o/$5.log" | tr '\n' ' ')"
}
for np in inception_v3:tf32:ios-both,sequential,greedy inception_v3:fp32:ios-both,sequential googlenet:fp16:ios-both,sequential nasnet:tf32:ios-both; do
  IFS=: read -r net p policies <<< "$np"; k=$(mktemp -d)/kc.json
  search base $net $p sequential "tune_${net}_$p" "$k" > /dev/null
  for r in $(seq 1 "$rounds"); do
    order="base new"; [ $((r % 2)) = 0 ] && order="new base"
    for v in $order; do
      for pol in ${policies//,/ }; do search $v $net $p $pol "${v}_${net}_${p}_${pol}_$r" "$k"; done
    done
  done
  rm -rf "$(dirname "$k")"
done
