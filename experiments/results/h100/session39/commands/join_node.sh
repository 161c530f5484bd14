#!/usr/bin/env bash
# Session 39: the review commit's GPU tests (GpuCompileAhead*, GpuKernelCache*); then an Inception V3 tf32 and a
# GoogLeNet fp16 IOS-Both schedule each searched once (measured model), and run staged in fresh `ios run`
# processes with IOS_JOIN_NODE=0 and 1 alternated over ROUNDS rounds (1: a fork after a join of several streams
# follows one empty graph node instead of every joined stream's last node).   join_node.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-4}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuCompileAhead*:GpuKernelCache*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
for np in inception_v3:tf32 googlenet:fp16; do
  net=${np%:*}; p=${np#*:}; k=$o/kc_${net}_$p.json
  timeout 150 build/bin/ios optimize --model $net --opt ios-both --precision $p --cost-model measured \
    --kernel-cache "$k" --out "$o/${net}_$p.json" > "$o/search_${net}_$p.log" 2>&1
  echo "search $net $p rc $?: $(grep -E '^Fidelity|Latency:' "$o/search_${net}_$p.log" | cut -c1-300 | tr '\n' ' ')"
  for r in $(seq 1 "$rounds"); do
    order="0 1"; [ $((r % 2)) = 0 ] && order="1 0"
    for j in $order; do
      IOS_JOIN_NODE=$j timeout 90 build/bin/ios run --model $net --precision $p --schedule "$o/${net}_$p.json" \
        --exec staged --iters 2000 --kernel-cache "$k" --check > "$o/run_${net}_${p}_j${j}_$r.log" 2>&1
      echo "$net $p join_node=$j round $r rc $?: $(grep -E 'Latency|Check' "$o/run_${net}_${p}_j${j}_$r.log" | cut -c1-200 | tr '\n' ' ')"
    done
  done
done
