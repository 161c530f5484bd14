#!/usr/bin/env bash
# Session 33: kernels rebuilt from the kernel cache file on 8 threads per GPU (--kernel-build-threads 8, the
# default) against one at a time (1). First the kernel-cache GPU tests; then NasNet fp32 IOS-Both searches
# (measured, --no-measure) on one GPU and on all GPUs of the host, both ways, alternated over ROUNDS rounds;
# then one search's schedule run by `ios run` in fresh processes whose kernels were built each way
# (alternated: s30 saw plans built on other threads run 2-4 % slower); the same for Inception V3 tf32, whose
# engines cuDNN compiles at run time.   threads.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -20
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag model precision devices threads
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model "$2" --opt ios-both --precision "$3" \
    --cost-model measured --quiet --no-measure --devices "$4" --kernel-build-threads "$5" \
    --kernel-cache "$o/kc_$2.json" --out "$o/$1.json" --json "$o/$1.report.json" > "$o/$1.log" 2>&1
  echo "$1 (--devices $4 --kernel-build-threads $5): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/$1.log" | tr '\n' ' ')"
  grep -E "^Search time|^Kernels" "$o/$1.log" | cut -c1-500
}
run() {  # tag model precision schedule threads
  timeout 90 build/bin/ios run --model "$2" --precision "$3" --schedule "$4" --kernel-cache "$o/kc_$2.json" \
    --kernel-build-threads "$5" --check > "$o/$1.log" 2>&1
  echo "$1: $(grep -E '^Latency|^Check|^Convolutions|[0-9.]+ s wall' "$o/$1.log" | cut -c1-200 | tr '\n' ' ')"
}
grep -q "H100" "$o/gpu.txt" || search nasnet_warmup nasnet fp32 0 8
for r in $(seq 1 "$rounds"); do
  search "nasnet_one_t1_r$r" nasnet fp32 0 1
  search "nasnet_one_t8_r$r" nasnet fp32 0 8
  search "nasnet_all_t1_r$r" nasnet fp32 all 1
  search "nasnet_all_t8_r$r" nasnet fp32 all 8
done
for i in 1 2 3; do for t in 1 8; do run "run_nasnet_t${t}_$i" nasnet fp32 "$o/nasnet_one_t1_r1.json" $t; done; done
search iv3_tf32_first inception_v3 tf32 0 8
for i in 1 2 3; do for t in 1 8; do run "run_iv3_t${t}_$i" inception_v3 tf32 "$o/iv3_tf32_first.json" $t; done; done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
