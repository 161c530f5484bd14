#!/usr/bin/env bash
# Session 37: why GoogLeNet's fp16 prediction is 12-14 % high where tf32's is not. Sequential and IOS-Both searched
# (stage caches kept) at fp16 and tf32, each schedule run staged under CUPTI, for exp_replay + stage_windows.py.
#   windows.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in fp16 tf32; do
  for opt in sequential ios-both; do
    n=googlenet_${p}_$opt
    timeout 90 build/bin/ios optimize --model googlenet --opt $opt --precision $p --cost-model measured \
      --kernel-cache "$k/kc_$p.json" --stage-cache "$o/${n}_stages.json" --out "$o/$n.json" > "$o/${n}_search.log" 2>&1
    echo "$n rc $?: $(grep -E '^Fidelity:' "$o/${n}_search.log" | cut -c1-200)"
    grep -E "^Stage timing" "$o/${n}_search.log" | cut -c1-600
    timeout 60 build/bin/ios run --model googlenet --precision $p --schedule "$o/$n.json" --exec staged --iters 500 \
      --kernel-cache "$k/kc_$p.json" --trace "$o/${n}_trace.json" > "$o/${n}_run.log" 2>&1
    echo "  run rc $?: $(grep -E '^Latency' "$o/${n}_run.log" | cut -c1-100)"
  done
done
