#!/usr/bin/env bash
# Session 30: Inception V3 tf32 IOS-Both searches from an empty kernel cache, build threads off and on
# alternating, N of each; per search: wall time, tuning line, fidelity, and the cold-share calibration
# (ops warm / cold sums) from its stage cache.  From the repository root on the GPU machine:
#   repeat_search.sh OUT N
set -uo pipefail
o=$1 n=${2:-4}
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for i in $(seq 1 "$n"); do
  for t in 0 -1; do
    tag=t${t}_$i
    /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 \
      --cost-model measured --quiet --build-threads $t --kernel-cache "$o/kc_$tag.json" --stage-cache "$o/sc_$tag.json" \
      --out "$o/iv3_$tag.json" > "$o/iv3_$tag.log" 2>&1
    calib=$(python3 -c "import json; c=json.load(open('$o/sc_$tag.json'))['calibration']; print('ops warm %.3f cold %.3f' % (c['b1|ops_warm_ms'], c['b1|ops_cold_ms']))")
    echo "threads $t #$i: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|tuned in [0-9.]+ s|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/iv3_$tag.log" | head -6 | tr '\n' ' ') $calib"
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader >> "$o/gpu_after_each.txt"
  done
done
