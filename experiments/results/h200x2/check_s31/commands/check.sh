#!/usr/bin/env bash
# Session 31, the code of 74185e7 on 2 GPUs of one host: the GPU suite without the network x policy x precision
# matrices (run on the H100 earlier in the session), then Inception V3 tf32 IOS-Both on one GPU (the cold
# share's calibration with the network back among the ops) and NasNet fp32 on both GPUs and on one.
#   check.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='-AllNetworksAllPoliciesAllModes*:EveryPrecisionAndLayout*' \
  > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ') skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests.log")"
grep -E "^\[calibration\]|Failure" -A3 "$o/gpu_tests.log" | head -20
search() {  # tag model precision devices [kernel cache]
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model $2 --opt ios-both --precision $3 \
    --cost-model measured --quiet --devices $4 --kernel-cache "$o/kc_$2.json" --stage-cache "$o/sc_$1.json" \
    --json "$o/$1.report.json" > "$o/$1.log" 2>&1
  calib=$(python3 -c "import json; c=json.load(open('$o/sc_$1.json'))['calibration']; print('share %.2f ops warm %.3f cold %.3f network %.3f' % (c['b1|share'], c['b1|ops_warm_ms'], c['b1|ops_cold_ms'], c['b1|network_ms']))")
  echo "$1: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$1.log" | tr '\n' ' ') $calib"
  grep -E "^Search time" "$o/$1.log"
}
search iv3_tf32_1 inception_v3 tf32 0
search iv3_tf32_2 inception_v3 tf32 0
search nasnet_warmup nasnet fp32 0
search nasnet_all nasnet fp32 all
search nasnet_one nasnet fp32 0
rm -f "$o"/kc_*.json "$o"/sc_*.json
