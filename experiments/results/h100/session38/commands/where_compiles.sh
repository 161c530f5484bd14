#!/usr/bin/env bash
# Session 38: where NasNet tf32's first-process tuning still compiles with the compile-ahead processes' plans
# loaded. A --verbose search as the machine's first tf32 process (each runtime-compiled candidate built: compiled
# or loaded, and in how many ms), then one compile-ahead process alone over the whole network (shard 0/1) writing
# its plans to a folder, whose file headers list every (convolution, plan) the processes cover.   where_compiles.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
CUDA_CACHE_PATH=$k/jit /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both \
  --precision tf32 --cost-model measured --kernel-cache "$k/kc.json" --verbose --out "$o/nasnet_tf32.json" \
  > "$o/search_nasnet_verbose.log" 2>&1
echo "nasnet verbose rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|[0-9.]+ s wall' "$o/search_nasnet_verbose.log" | tr '\n' ' ')"
grep -E "^Kernels|calibrating" "$o/search_nasnet_verbose.log" | cut -c1-400
echo "compiled: $(grep -c 'compiled at run time in' "$o/search_nasnet_verbose.log"), loaded: $(grep -c 'loaded as a compile-ahead' "$o/search_nasnet_verbose.log")"
mkdir -p "$k/plans"
CUDA_CACHE_PATH=$k/jit2 /usr/bin/time -f "%e s wall" timeout 200 build/bin/ios compile-ahead --model nasnet \
  --precision tf32 --kernel-cache none --shard 0/1 --plans-dir "$k/plans" > "$o/compile_ahead_all.log" 2>&1
echo "compile-ahead 0/1 rc $?: $(cat "$o/compile_ahead_all.log" | tr '\n' ' ')"
for f in "$k"/plans/*.plan; do head -1 "$f"; done > "$o/ahead_plans.txt"
echo "plan files: $(wc -l < "$o/ahead_plans.txt")"
xz -9 "$o/search_nasnet_verbose.log" "$o/nasnet_tf32.json"
rm -rf "$k"
