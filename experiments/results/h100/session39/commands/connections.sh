#!/usr/bin/env bash
# Session 39: the hardware work queues a process's CUDA graphs are spread over (CUDA_DEVICE_MAX_CONNECTIONS; the
# driver's default is 8). Inception V3 tf32 and GoogLeNet fp16 IOS-Both searched once each (kernel cache), then
# run staged and dataflow in fresh `ios run` processes with 8 (unset), 32 and 4 connections, alternated over ROUNDS
# rounds; then the search again with 32 connections (its fidelity lines).   connections.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 googlenet:fp16; do
  IFS=: read -r net p <<< "$np"; k=$(mktemp -d)/kc.json
  timeout 200 build/bin/ios optimize --model $net --opt ios-both --precision $p --cost-model measured \
    --kernel-cache "$k" --out "$o/${net}_$p.json" > "$o/search_${net}_$p.log" 2>&1
  echo "search $net $p rc $?: $(grep -oE 'measured / predicted [0-9.]+' "$o/search_${net}_$p.log" | tr '\n' ' ')"
  for r in $(seq 1 "$rounds"); do
    order="8 32 4"; [ $((r % 2)) = 0 ] && order="4 32 8"
    for c in $order; do
      for x in staged dataflow; do
        env $([ $c != 8 ] && echo CUDA_DEVICE_MAX_CONNECTIONS=$c) timeout 90 build/bin/ios run --model $net \
          --precision $p --schedule "$o/${net}_$p.json" --exec $x --iters 2000 --kernel-cache "$k" \
          > "$o/run_${net}_${p}_${x}_c${c}_$r.log" 2>&1
        echo "$net $p $x connections=$c round $r rc $?: $(grep -E '^Latency' "$o/run_${net}_${p}_${x}_c${c}_$r.log" | cut -c1-100)"
      done
    done
  done
  CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 200 build/bin/ios optimize --model $net --opt ios-both --precision $p \
    --cost-model measured --kernel-cache "$k" > "$o/search32_${net}_$p.log" 2>&1
  echo "search (32 connections) $net $p rc $?: $(grep -oE 'Latency: [0-9.]+ ms|measured end to end [0-9.]+ ms|measured / predicted [0-9.]+' "$o/search32_${net}_$p.log" | tr '\n' ' ')"
  rm -rf "$(dirname "$k")"
done
