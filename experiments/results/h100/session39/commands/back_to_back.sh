#!/usr/bin/env bash
# Session 39: how much of the end-to-end figure is the host's graph launch, and whether the search's process runs
# the network slower. Inception V3 tf32 and GoogLeNet fp16 IOS-Both searched twice each (the second from the first's
# kernel cache), each search's fidelity run also timed with 10 replays back to back per event pair
# (IOS_FIDELITY_B2B=10, then one replay a sample again); then the first schedule in fresh `ios run` processes, one
# replay a sample (IOS_B2B=1) against 10 back to back (IOS_B2B=10), alternated over ROUNDS rounds.
# back_to_back.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for np in inception_v3:tf32 googlenet:fp16; do
  net=${np%:*}; p=${np#*:}; k=$(mktemp -d)/kc.json
  for i in 1 2; do
    IOS_FIDELITY_B2B=10 timeout 150 build/bin/ios optimize --model $net --opt ios-both --precision $p \
      --cost-model measured --kernel-cache "$k" --out "$o/${net}_${p}_$i.json" > "$o/search_${net}_${p}_$i.log" 2>&1
    echo "search $net $p $i rc $?: $(grep -E '^Fidelity|Latency:|^EXPERIMENT' "$o/search_${net}_${p}_$i.log" | cut -c1-300 | tr '\n' ' ')"
  done
  for r in $(seq 1 "$rounds"); do
    order="1 10"; [ $((r % 2)) = 0 ] && order="10 1"
    for b in $order; do
      IOS_B2B=$b timeout 90 build/bin/ios run --model $net --precision $p --schedule "$o/${net}_${p}_1.json" \
        --exec staged --iters 2000 --kernel-cache "$k" > "$o/run_${net}_${p}_b${b}_$r.log" 2>&1
      echo "$net $p b2b=$b round $r rc $?: $(grep -E 'Latency' "$o/run_${net}_${p}_b${b}_$r.log" | cut -c1-200)"
    done
  done
  rm -rf "$(dirname "$k")"
done
