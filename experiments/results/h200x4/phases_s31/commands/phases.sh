#!/usr/bin/env bash
# Session 31: where NasNet's fp32 IOS-Both search (measured cost model, --no-measure) spends its time on
# all GPUs of one host against one: the "Search time" line (policy, worker load, calibration, barriers).
# Kernel choices from session 29's H100 cache (on other GPUs a first one-GPU search tunes them).
#   phases.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # tag devices [more flags]
  local tag=$1 devices=$2
  shift 2
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$devices" --kernel-cache "$o/kernel_cache.json" \
    --out "$o/nasnet_$tag.json" --json "$o/nasnet_$tag.report.json" "$@" > "$o/nasnet_$tag.log" 2>&1
  echo "$tag (--devices $devices $*): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/nasnet_$tag.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/nasnet_$tag.log"
}
grep -q "H100" "$o/gpu.txt" || search warmup 0
search all all
search one 0
search all_2pergpu all --workers-per-gpu 2
search all_again all
