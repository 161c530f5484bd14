#!/usr/bin/env bash
# Session 37: runtime-compiled engines that keep losing are no longer compiled (rt::LosingEngines). Each search
# as a machine's first process of its precision: an empty driver JIT cache (CUDA_CACHE_PATH) and an empty kernel
# cache of its own; base and new alternated.
#   ab.sh OUT [ROUNDS]    (ROUNDS of Inception V3 tf32; 0: none, nor fp16)
# WITH_NASNET=1: NasNet tf32 once each, new first; NASNET_ROUNDS=N: N rounds alternating which goes first;
# WITH_RANDWIRE=1: RandWire (IOS's graph files under build/randwire_graphs) tf32 once each.
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"
B=build/bin/ios_base; N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # bin tag net precision round limit
  local k; k=$(mktemp -d)
  local extra=""; [ "$3" = randwire ] && extra="--randwire-graphs build/randwire_graphs"
  CUDA_CACHE_PATH=$k/jit timeout "$6" "$1" optimize --model "$3" $extra --opt ios-both --precision "$4" --cost-model measured \
    --kernel-cache "$k/kc.json" --out "$o/${3}_${4}_$2_$5.json" > "$o/search_${3}_${4}_$2_$5.log" 2>&1
  echo "$3 $4 $2 round $5 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms' "$o/search_${3}_${4}_$2_$5.log")"
  grep -E "^Kernels|^Fidelity" "$o/search_${3}_${4}_$2_$5.log" | cut -c1-330
  rm -rf "$k"
}
for r in $(seq 1 "$rounds"); do
  for b in base new; do
    bin=$N; [ $b = base ] && bin=$B
    search $bin $b inception_v3 tf32 $r 120
  done
done
if [ "$rounds" -gt 0 ]; then
  for b in base new; do
    bin=$N; [ $b = base ] && bin=$B
    search $bin $b inception_v3 fp16 1 120
  done
fi
if [ "${WITH_NASNET:-0}" = 1 ]; then
  for b in new base; do
    bin=$N; [ $b = base ] && bin=$B
    search $bin $b nasnet tf32 1 150
  done
fi
for r in $(seq 1 "${NASNET_ROUNDS:-0}"); do
  order="base new"; [ $((r % 2)) = 0 ] && order="new base"
  for b in $order; do
    bin=$N; [ $b = base ] && bin=$B
    search $bin $b nasnet tf32 $r 150
  done
done
if [ "${WITH_RANDWIRE:-0}" = 1 ]; then
  for b in base new; do
    bin=$N; [ $b = base ] && bin=$B
    search $bin $b randwire tf32 1 150
  done
fi
