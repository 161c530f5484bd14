#!/usr/bin/env bash
# Session 38: compile-ahead processes that build every convolution's first-ranked runtime-compiled plan before
# any second (new, build/bin/ios) against ones that build each convolution's plans in turn (base,
# build/bin/ios_base; both write their plans for the tuning process to load, both with the default
# --compile-ahead auto). The compile-ahead GPU tests first; then NasNet and Inception V3 tf32 IOS-Both searches
# as a machine's first tf32 process (an empty driver JIT cache and kernel cache each), alternated over ROUNDS
# rounds.   rank_ahead.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-2}; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 100 build/bin/ios_gpu_tests --gtest_filter='GpuCompileAhead.*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc $?: $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED|compile ahead\]' "$o/gpu_tests.log" | tr '\n' ' ')"
search() {  # variant net round
  local bin=build/bin/ios; [ "$1" = base ] && bin=build/bin/ios_base
  local k; k=$(mktemp -d)
  CUDA_CACHE_PATH=$k/jit /usr/bin/time -f "%e s wall" timeout 150 $bin optimize --model "$2" --opt ios-both \
    --precision tf32 --cost-model measured --kernel-cache "$k/kc.json" --out "$o/$2_$1_$3.json" \
    > "$o/search_$2_$1_$3.log" 2>&1
  echo "$2 $1 $3 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_$2_$1_$3.log" | tr '\n' ' ')"
  grep -E "^Kernels|^Fidelity:" "$o/search_$2_$1_$3.log" | cut -c1-330
  rm -rf "$k"
}
for r in $(seq 1 "$rounds"); do
  order="new base"; [ $((r % 2)) = 0 ] && order="base new"
  for v in $order; do search $v nasnet $r; done
  for v in $order; do search $v inception_v3 $r; done
done
