#!/usr/bin/env bash
# Session 30: Inception V3 IOS-Both searches from an empty kernel cache, alternating N times at tf32 (then
# once each at fp32): build/bin/base/ios (4b5e482), build/bin/base/ios_nocache (rounds queued behind a head
# start; the spin asks the device's clock rate each time) unless NOCACHE=0, and build/bin/ios (the same,
# the clock rate asked once per device). Per search: times, tuning, the stage-timing line's requeues, fidelity, the cold-share calibration.
#   searches.sh OUT N
set -uo pipefail
o=$1 n=${2:-4}
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # binary tag precision
  local bin=$1 tag=$2 p=$3
  /usr/bin/time -f "%e s wall" timeout 120 $bin optimize --model inception_v3 --opt ios-both --precision $p \
    --cost-model measured --quiet --kernel-cache "$o/kc_$tag.json" --stage-cache "$o/sc_$tag.json" \
    --out "$o/iv3_$tag.json" > "$o/iv3_$tag.log" 2>&1
  calib=$(python3 -c "import json; c=json.load(open('$o/sc_$tag.json'))['calibration']; print('ops warm %.3f cold %.3f' % (c['b1|ops_warm_ms'], c['b1|ops_cold_ms']))")
  echo "$tag: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|tuned in [0-9.]+ s|[0-9]+ queued again( \([^)]*\))?|spread median [0-9.]+% p90 [0-9.]+%|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/iv3_$tag.log" | tr '\n' ' ') $calib"
}
for i in $(seq 1 "$n"); do
  search build/bin/base/ios base_tf32_$i tf32
  [ "${NOCACHE:-1}" = 1 ] && search build/bin/base/ios_nocache nocache_tf32_$i tf32
  search build/bin/ios new_tf32_$i tf32
done
search build/bin/base/ios base_fp32_1 fp32
search build/bin/ios new_fp32_1 fp32
