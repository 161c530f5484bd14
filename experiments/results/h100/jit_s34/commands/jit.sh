#!/usr/bin/env bash
# Session 34: does compiling cuDNN's runtime-compiled engines run side by side in separate processes? NasNet and
# RandWire tf32 IOS-Both searches from empty kernel caches, each with a driver JIT cache of its own
# (CUDA_CACHE_PATH, empty), first one after the other, then both at once (fresh caches again); each search's
# "compiling at run time" seconds compared.   jit.sh OUT   (IOS's RandWire graph files under build/randwire_graphs)
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # model tag
  CUDA_CACHE_PATH=$o/jit_$2_$1 /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model $1 \
    --randwire-graphs build/randwire_graphs --opt ios-both --precision tf32 --cost-model measured --quiet --no-measure \
    --kernel-cache "$o/kc_$2_$1.json" > "$o/$2_$1.log" 2>&1
}
report() { echo "$2 $1: $(grep -oE 'Optimization cost: [0-9.]+ sec|[0-9]+ engines tuned in [0-9.]+ s|[0-9.]+ s compiling at run time|[0-9.]+ s wall' "$o/$2_$1.log" | tr '\n' ' ')"; }
search nasnet alone; report nasnet alone
search randwire alone; report randwire alone
search nasnet together & search randwire together & wait
report nasnet together; report randwire together
rm -rf "$o"/jit_* "$o"/kc_*
