#!/usr/bin/env bash
# Session 38: NasNet tf32 IOS-Both searches as a machine's first tf32 process (an empty driver JIT cache and
# kernel cache each), the default --compile-ahead (auto) against 0, auto first.   nasnet_ahead.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
for a in auto 0; do
  k=$(mktemp -d)
  CUDA_CACHE_PATH=$k/jit /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model nasnet --opt ios-both \
    --precision tf32 --cost-model measured --compile-ahead $a --kernel-cache "$k/kc.json" --out "$o/nasnet_$a.json" \
    > "$o/search_nasnet_$a.log" 2>&1
  echo "nasnet tf32 --compile-ahead $a rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_nasnet_$a.log" | tr '\n' ' ')"
  grep -E "^Kernels|^Fidelity" "$o/search_nasnet_$a.log" | cut -c1-300
  rm -rf "$k"
done
