#!/usr/bin/env bash
# Session 32: kernels rebuilt from the kernel cache file by engine id and knobs (ios) against the heuristics
# query (ios_prev, the commit before), alternated: Inception V3 tf32 (a first search fills both caches) and
# NasNet fp32 (session 29's H100 cache file) IOS-Both searches, then `ios run` of each search's schedule; then
# the kernel-cache and runtime GPU tests.   rebuild_ab.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # binary tag model precision
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/$1 optimize --model "$3" --opt ios-both --precision "$4" \
    --cost-model measured --quiet --kernel-cache "$o/kc_$3.json" --out "$o/$1_$2.json" --json "$o/$1_$2.report.json" \
    > "$o/$1_$2.log" 2>&1
  echo "$1 $2: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time|^Kernels" "$o/$1_$2.log" | cut -c1-400
}
search ios iv3_first inception_v3 tf32
for r in $(seq 1 "$rounds"); do
  for b in ios_prev ios; do search $b "iv3_r$r" inception_v3 tf32; search $b "nasnet_r$r" nasnet fp32; done
done
# The same schedule run by each binary's kernels (the engines must be the same: the same latency).
for b in ios_prev ios ios_prev ios; do
  timeout 60 build/bin/$b run --model nasnet --precision fp32 --schedule "$o/ios_nasnet_r1.json" --kernel-cache "$o/kc_nasnet.json" \
    --check > "$o/run_$b.log" 2>&1; echo "run $b: $(grep -E '^Latency|^Check' "$o/run_$b.log" | cut -c1-120 | tr '\n' ' ')"
done
timeout 150 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:ConvTuning*:GpuOps*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ') skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests.log")"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
rm -f "$o"/kc_*.json "$o"/*.json.tmp
xz -9 "$o"/*_r*.json 2>/dev/null
