#!/usr/bin/env bash
# Session 38: compile-ahead processes taking the network's convolutions first to last, each every n-th (new,
# build/bin/ios) against last to first (base, build/bin/ios_base); both write their plans for the tuning process
# to load. NasNet and Inception V3 tf32 IOS-Both as a machine's first tf32 process (an empty driver JIT cache and
# kernel cache each), --verbose (each runtime-compiled candidate: compiled, or loaded), alternated over ROUNDS
# rounds.   forward_ahead.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-1}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # variant net round
  local bin=build/bin/ios; [ "$1" = base ] && bin=build/bin/ios_base
  local k; k=$(mktemp -d)
  CUDA_CACHE_PATH=$k/jit /usr/bin/time -f "%e s wall" timeout 150 $bin optimize --model "$2" --opt ios-both \
    --precision tf32 --cost-model measured --kernel-cache "$k/kc.json" --verbose --out "$o/$2_$1_$3.json" \
    > "$o/search_$2_$1_$3.log" 2>&1
  echo "$2 $1 $3 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_$2_$1_$3.log" | tr '\n' ' ')"
  grep -E "^Kernels|^Fidelity:" "$o/search_$2_$1_$3.log" | cut -c1-330
  echo "  compiled by tuning: $(grep -oE 'compiled at run time in [0-9.]+ ms' "$o/search_$2_$1_$3.log" | awk '{s+=$6; n++} END {printf "%d plans, %.1f s", n, s/1000}')"
  xz -9 "$o/search_$2_$1_$3.log" "$o/$2_$1_$3.json"
  rm -rf "$k"
}
for r in $(seq 1 "$rounds"); do
  order="new base"; [ $((r % 2)) = 0 ] && order="base new"
  for v in $order; do search $v nasnet $r; done
  for v in $order; do search $v inception_v3 $r; done
done
