#!/usr/bin/env bash
# Session 38: RandWire (IOS's graph files, build/randwire_graphs) tf32 IOS-Both with the final binaries as a machine's
# first tf32 process (an empty driver JIT cache and kernel cache), default flags (compile-ahead auto).   randwire.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
CUDA_CACHE_PATH=$k/jit /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model randwire \
  --randwire-graphs build/randwire_graphs --opt ios-both --precision tf32 --cost-model measured \
  --kernel-cache "$k/kc.json" --out "$o/randwire_tf32.json" > "$o/search_randwire_tf32.log" 2>&1
echo "randwire tf32 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_randwire_tf32.log" | tr '\n' ' ')"
grep -E "^Kernels|^Fidelity" "$o/search_randwire_tf32.log" | cut -c1-330
rm -rf "$k"
