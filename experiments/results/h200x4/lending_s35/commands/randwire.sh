#!/usr/bin/env bash
# Session 35, third call: RandWire (IOS's graph files, build/randwire_graphs) has 6 parts, fewer than the
# 8 workers of 4 GPUs: workers out of parts lent (build/bin/ios) against 640720c (build/bin/ios_base).
# fp32 IOS-Both (measured, --no-measure, two workers per GPU), kernel choices from session 29's H100 cache
# file, re-tuned by a first one-GPU search; then alternated.   randwire.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc.json"
search() {  # tag binary devices
  /usr/bin/time -f "%e s wall" timeout 200 "$2" optimize --model randwire --randwire-graphs build/randwire_graphs \
    --opt ios-both --precision fp32 --cost-model measured --quiet --no-measure --devices "$3" \
    --kernel-cache "$o/kc.json" --json "$o/randwire_$1.report.json" > "$o/randwire_$1.log" 2>&1
  echo "$1 (--devices $3): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/randwire_$1.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/randwire_$1.log" | grep -oE "^Search time: [0-9.]+ s policy|busy [0-9., ]+ s|timed [0-9]+ stages for the others in [0-9]+ chunks|[0-9.]+ s dataflow barriers" | tr '\n' ' '; echo
}
new=build/bin/ios base=build/bin/ios_base
search warmup $new 0
for r in $(seq 1 "$rounds"); do
  search "all_r$r" $new all
  search "all_base_r$r" $base all
  search "one_r$r" $new 0
  search "one_base_r$r" $base 0
done
rm -f "$o"/kc*.json "$o"/*.json.tmp
