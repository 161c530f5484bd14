#!/usr/bin/env bash
# Session 31 on one H100: the GPU test suite, then Inception V3 IOS-Both searches from empty caches,
# alternating N times at tf32 (then once each at fp32) between build/bin/base/ios (5a07119, session 30)
# and build/bin/ios (the calibration's network timed in a pass of its own; the search-time line).
# Per search: times, tuning, the search-time split, fidelity, the cold-share calibration.   searches.sh OUT N
set -uo pipefail
o=$1 n=${2:-3}
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests > "$o/gpu_tests.log" 2>&1
echo "GPU tests: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ') skipped: $(grep -c '\[  SKIPPED \]' "$o/gpu_tests.log")"
search() {  # binary tag precision
  local bin=$1 tag=$2 p=$3
  /usr/bin/time -f "%e s wall" timeout 120 $bin optimize --model inception_v3 --opt ios-both --precision $p \
    --cost-model measured --quiet --kernel-cache "$o/kc_$tag.json" --stage-cache "$o/sc_$tag.json" \
    --out "$o/iv3_$tag.json" > "$o/iv3_$tag.log" 2>&1
  calib=$(python3 -c "import json; c=json.load(open('$o/sc_$tag.json'))['calibration']; print('share %.2f ops warm %.3f cold %.3f network %.3f' % (c['b1|share'], c['b1|ops_warm_ms'], c['b1|ops_cold_ms'], c['b1|network_ms']))")
  echo "$tag: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|tuned in [0-9.]+ s|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/iv3_$tag.log" | tr '\n' ' ') $calib"
  grep -E "^Search time" "$o/iv3_$tag.log"
}
for i in $(seq 1 "$n"); do
  search build/bin/base/ios base_tf32_$i tf32
  search build/bin/ios new_tf32_$i tf32
done
search build/bin/base/ios base_fp32_1 fp32
search build/bin/ios new_fp32_1 fp32
rm -f "$o"/kc_*.json "$o"/iv3_*.json
rm -f "$o"/sc_*.json  # the calibration values are in the console line
