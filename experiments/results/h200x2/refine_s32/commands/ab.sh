#!/usr/bin/env bash
# Session 32: the GPU tests that pack weights in every precision and layout, then NasNet's fp32 IOS-Both search
# (measured cost model, --no-measure) by the binary before (build/bin/ios_prev: 1e3d38a) and after (ios) the
# faster weight packing, on one GPU and on all, alternated over ROUNDS rounds.   ab.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuRuntime*:*EveryPrecisionAndLayout*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ') skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests.log")"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # binary tag devices
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/$1 optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$3" --kernel-cache "$o/kernel_cache.json" \
    --json "$o/$1_$2.report.json" > "$o/$1_$2.log" 2>&1
  echo "$1 $2 (--devices $3): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time|refined" "$o/$1_$2.log"
}
grep -q "H100" "$o/gpu.txt" || search ios warmup 0
for r in $(seq 1 "$rounds"); do
  search ios_prev "one_r$r" 0
  search ios "one_r$r" 0
  search ios_prev "all_r$r" all
  search ios "all_r$r" all
done
rm -f "$o/kernel_cache.json"
