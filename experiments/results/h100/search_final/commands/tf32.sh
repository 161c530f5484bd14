#!/usr/bin/env bash
# NasNet and RandWire (IOS's graph files) tf32 IOS-Both with `ios optimize` from empty kernel caches, on the
# machine of final.sh right after it, every search measured end to end.   tf32.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; c=$(mktemp -d)
for net in nasnet randwire; do
  graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model $net $graphs --opt ios-both --precision tf32 \
    --cost-model measured --kernel-cache "$c/$net.json" --json "$o/${net}_tf32.json" > "$o/${net}_tf32.log" 2>&1
  echo "${net}_tf32 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/${net}_tf32.log" | tr '\n' ' ')"
done
