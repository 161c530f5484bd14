#!/usr/bin/env bash
# Session 33: a context's clocks brought up by timed 2 ms spins until one runs at the top clock (ios) against
# the fixed 300 ms spin (ios_base, 51f4167), alternated in one lease: NasNet fp32 IOS-Both searches (session
# 29's H100 kernel cache file), Inception V3 tf32 searches (a first search fills the kernel cache), then
# `ios run` of one schedule of each in fresh processes (latency, check, wall time). First the GPU tests of
# the bring-up and the kernel cache.   clocks.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.BringingUp*:GpuKernelCache*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[clocks\]|^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # binary tag model precision
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/$1 optimize --model "$3" --opt ios-both --precision "$4" \
    --cost-model measured --quiet --kernel-cache "$o/kc_$3.json" --out "$o/$1_$2.json" --json "$o/$1_$2.report.json" \
    > "$o/$1_$2.log" 2>&1
  echo "$1 $2: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time|^Kernels" "$o/$1_$2.log" | cut -c1-420
}
run() {  # binary tag model precision schedule
  /usr/bin/time -f "%e s wall" timeout 90 build/bin/$1 run --model "$3" --precision "$4" --schedule "$5" \
    --kernel-cache "$o/kc_$3.json" --check > "$o/run_$1_$2.log" 2>&1
  echo "run $1 $2: $(grep -E '^Latency|^Check|s wall$' "$o/run_$1_$2.log" | cut -c1-110 | tr '\n' ' ')"
  grep -oE "first runs\)(, clocks brought up in [0-9.]+ s)?" "$o/run_$1_$2.log"
}
search ios iv3_first inception_v3 tf32
for r in $(seq 1 "$rounds"); do
  for b in ios_base ios; do search $b "nasnet_r$r" nasnet fp32; search $b "iv3_r$r" inception_v3 tf32; done
done
for i in 1 2; do
  for b in ios_base ios; do
    run $b "nasnet_$i" nasnet fp32 "$o/ios_nasnet_r1.json"
    run $b "iv3_$i" inception_v3 tf32 "$o/ios_iv3_r1.json"
  done
done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
