#!/usr/bin/env bash
# Session 38: Inception V3 tf32 IOS-Both searches as a machine's first tf32 process (an empty driver JIT cache,
# CUDA_CACHE_PATH, and an empty kernel cache of its own each), --compile-ahead 0 against auto (half the cores,
# at most 8 processes) alternated over ROUNDS rounds; then the search again from the last kernel cache (the
# cached re-search), twice.   compile_ahead.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"; keep=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # tag ahead kernel-cache-dir
  CUDA_CACHE_PATH=$3/jit /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 \
    --opt ios-both --precision tf32 --cost-model measured --compile-ahead "$2" --kernel-cache "$3/kc.json" \
    --out "$o/iv3_$1.json" > "$o/search_$1.log" 2>&1
  echo "$1 (--compile-ahead $2) rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_$1.log" | tr '\n' ' ')"
  grep -E "^Kernels|^Fidelity" "$o/search_$1.log" | cut -c1-300
}
for r in $(seq 1 "$rounds"); do
  order="off auto"; [ $((r % 2)) = 0 ] && order="auto off"
  for v in $order; do
    k=$(mktemp -d); a=0; [ $v = auto ] && a=auto
    search "${v}_$r" $a "$k"
    if [ "$r" = "$rounds" ] && [ $v = auto ]; then cp -r "$k/." "$keep/"; fi
    rm -rf "$k"
  done
done
for i in 1 2; do search "research_$i" 0 "$keep"; done
rm -rf "$keep"
