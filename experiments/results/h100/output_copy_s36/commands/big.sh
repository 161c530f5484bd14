#!/usr/bin/env bash
# Session 36: the output copy on the large networks at tf32. Per network, base's measured IOS-Both search
# (its schedule), then that schedule run by both binaries, each with a kernel cache of its own (tuned in its
# first run), alternated three times, --exec auto --check.   big.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
B=build/bin/ios_base; N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for net in densenet121 nasnet; do
  timeout 150 $B optimize --model $net --opt ios-both --precision tf32 --cost-model measured \
    --kernel-cache "$k/kc_${net}_base.json" --out "$o/$net.json" > "$o/search_$net.log" 2>&1
  echo "search $net rc $?: $(grep -E 'Optimization cost' "$o/search_$net.log" | cut -c1-120)"
  for r in 1 2 3; do
    for v in base new; do
      bin=$B; [ $v = new ] && bin=$N
      timeout 120 $bin run --schedule "$o/$net.json" --model $net --precision tf32 --exec auto --iters 300 --check \
        --kernel-cache "$k/kc_${net}_$v.json" > "$o/run_${net}_${v}_$r.log" 2>&1
      echo "$net binary $v round $r rc $?: $(grep -E 'Exec auto|Latency|Check' "$o/run_${net}_${v}_$r.log" | cut -c1-100 | tr '\n' ' ')"
    done
  done
  grep -E "^Convolutions" "$o/run_${net}_new_1.log" | cut -c1-160
done
