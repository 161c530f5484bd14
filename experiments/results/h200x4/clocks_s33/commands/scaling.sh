#!/usr/bin/env bash
# Session 33: NasNet fp32 IOS-Both (measured, --no-measure) on one GPU and on all GPUs of one host, ios (clocks
# brought up by timed spins, the stage boundary measured at the top clock) against ios_base (51f4167: a fixed
# 300 ms spin, the boundary measured at whatever clock the GPU was at), alternated over ROUNDS rounds; then
# Inception V3 tf32 on one GPU with its schedule run (measured / predicted), both binaries alternated (a first
# search fills the kernel cache). Kernel
# choices for NasNet from session 29's H100 cache file, re-tuned by a first one-GPU search on other GPUs.
#   scaling.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 100 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.BringingUp*:GpuRuntime.TheColdShare*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[clocks\]|^\[calibration\]|^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # binary tag model precision devices [--no-measure]
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/$1 optimize --model "$3" --opt ios-both --precision "$4" \
    --cost-model measured --quiet ${6:-} --devices "$5" --kernel-cache "$o/kc_$3.json" \
    --json "$o/$1_$2.report.json" > "$o/$1_$2.log" 2>&1
  echo "$1 $2: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ') $(grep -oE 'less the stage boundary, [0-9.]+ us a replay and [0-9.]+ us a span' "$o/$1_$2.log")"
  grep -E "^Search time|^Kernels" "$o/$1_$2.log" | cut -c1-420
}
grep -q "H100" "$o/gpu.txt" || search ios nasnet_warmup nasnet fp32 0 --no-measure
for r in $(seq 1 "$rounds"); do
  for b in ios_base ios; do
    search $b "nasnet_one_r$r" nasnet fp32 0 --no-measure
    search $b "nasnet_all_r$r" nasnet fp32 all --no-measure
  done
done
search ios iv3_first inception_v3 tf32 0
for r in 1 2; do for b in ios_base ios; do search $b "iv3_r$r" inception_v3 tf32 0; done; done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
