#!/usr/bin/env bash
# Search time on all the GPUs of one host against one of them: IOS-Both fp32 (measured, --no-measure, kernel
# choices tuned by a first one-GPU search from an empty kernel cache), --devices all and --devices 0 alternated
# over ROUNDS rounds, per network.
#   devices.sh OUT ROUNDS NET...
set -uo pipefail
o=$1; rounds=$2; shift 2; mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for net in "$@"; do
  k=$(mktemp -d); graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  search() {  # tag devices
    /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model $net $graphs --opt ios-both --precision fp32 \
      --cost-model measured --quiet --no-measure --devices "$2" --kernel-cache "$k/kc.json" > "$o/${net}_$1.log" 2>&1
    echo "$net $1 (--devices $2): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/${net}_$1.log" | tr '\n' ' ')"
  }
  search warmup 0
  for r in $(seq 1 "$rounds"); do
    search "all_r$r" all
    search "one_r$r" 0
  done
  rm -rf "$k"
done
