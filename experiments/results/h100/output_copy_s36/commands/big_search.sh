#!/usr/bin/env bash
# Session 36: #10's large-network search times with the final binaries at tf32, on a machine just started:
# NasNet then RandWire (IOS's graph files) IOS-Both, measured, each from an empty kernel cache.   big_search.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for net in nasnet randwire; do
  extra=""; [ $net = randwire ] && extra="--randwire-graphs build/randwire_graphs"
  timeout 200 build/bin/ios optimize --model $net $extra --opt ios-both --precision tf32 --cost-model measured \
    --kernel-cache "$k/kc_$net.json" --out "$o/$net.json" > "$o/search_$net.log" 2>&1
  echo "search $net rc $?: $(grep -E 'Optimization cost|^Kernels|^Fidelity' "$o/search_$net.log" | cut -c1-200 | tr '\n' ' ')"
done
xz -9 "$o"/*.json
