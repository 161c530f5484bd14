#!/usr/bin/env bash
# Session 30: NasNet's fp32 IOS-Both search (measured cost model) on all GPUs of one host, then on one of
# them, same machine; kernel choices from session 29's H100 cache (where the GPUs are not H100s, a first
# one-GPU search tunes them). --no-measure: the search alone.   devices.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
nvidia-smi topo -m > "$o/topo.txt" 2>&1
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # tag devices
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices $2 --kernel-cache "$o/kernel_cache.json" \
    --out "$o/nasnet_$1.json" > "$o/nasnet_$1.log" 2>&1
  echo "$1 (--devices $2): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9]+ stages timed|engines tuned in [0-9.]+ s|[0-9.]+ s wall' "$o/nasnet_$1.log" | tr '\n' ' ')"
}
grep -q "H100" "$o/gpu.txt" || search warmup 0
search all all
search one 0
