#!/usr/bin/env bash
# Heuristics-only vs exhaustive cuDNN engine tuning (--conv-engine graph | graph-exhaustive), end to end.
# From the repository root on the GPU machine, binaries in build/bin:
#   run_conv_engine.sh OUT "NET..." "PRECISION..." [ROUNDS]
# Each network x precision is tuned once per engine mode into a fresh kernel cache (tuning wall time
# logged), then run ROUNDS times in ABAB order with IOS-Both's analytic schedule (1000 replays each).
set -uo pipefail
out=${1:-experiments/results/latest/conv_engine}
nets=${2:-"densenet121 googlenet inception_v3 squeezenet"}
precisions=${3:-"fp32 fp16"}
rounds=${4:-3}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache_fresh.json"
rm -f "$IOS_KERNEL_CACHE"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
run() {  # NET PRECISION ENGINE ITERS
  timeout 300 build/bin/ios run --model "$1" --precision "$2" --opt ios-both --conv-engine "$3" --iters "$4" 2>&1
}
for net in $nets; do
  for p in $precisions; do
    for e in graph graph-exhaustive; do
      start=$(date +%s%N)
      run "$net" "$p" "$e" 20 | grep -E "engines tuned" | sed "s/^/$net $p $e tuning: /" | tee -a "$out/tuning.log"
      echo "$net $p $e tuning wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/tuning.log"
    done
    for i in $(seq "$rounds"); do
      for e in graph graph-exhaustive; do
        run "$net" "$p" "$e" 1000 | grep -E "^Latency" | sed "s/^/$net $p $e round $i: /" | tee -a "$out/abab.log"
      done
    done
  done
done
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$out/gpu.txt"
