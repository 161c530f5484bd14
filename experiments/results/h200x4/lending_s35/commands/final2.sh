#!/usr/bin/env bash
# Session 35, fifth call: only the workers of a GPU whose workers are all out of parts lent
# (build/bin/ios), against the fourth call's binary (build/bin/ios_prev: any worker of another GPU lent)
# and 640720c (build/bin/ios_base: none). RandWire and NasNet fp32 IOS-Both (measured, --no-measure, two
# workers per GPU, kernel choices from session 29's H100 cache file, re-tuned by a first one-GPU search),
# on all GPUs, alternated.   final2.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc.json"
search() {  # model tag binary devices
  local extra=()
  [ "$1" = randwire ] && extra=(--randwire-graphs build/randwire_graphs)
  /usr/bin/time -f "%e s wall" timeout 200 "$3" optimize --model "$1" "${extra[@]}" \
    --opt ios-both --precision fp32 --cost-model measured --quiet --no-measure --devices "$4" \
    --kernel-cache "$o/kc.json" --json "$o/$1_$2.report.json" > "$o/$1_$2.log" 2>&1
  echo "$1 $2 (--devices $4): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/$1_$2.log" | grep -oE "^Search time: [0-9.]+ s policy|busy [0-9., ]+ s|timed [0-9]+ stages for the others in [0-9]+ chunks|[0-9.]+ s dataflow barriers" | tr '\n' ' '; echo
}
new=build/bin/ios prev=build/bin/ios_prev base=build/bin/ios_base
search randwire warmup $new 0
search nasnet warmup $new 0
for r in 1 2; do
  search randwire "all_r$r" $new all
  search randwire "all_prev_r$r" $prev all
done
for r in 1 2 3; do
  search nasnet "all_r$r" $new all
  search nasnet "all_prev_r$r" $prev all
  search nasnet "all_base_r$r" $base all
done
rm -f "$o"/kc*.json "$o"/*.json.tmp
