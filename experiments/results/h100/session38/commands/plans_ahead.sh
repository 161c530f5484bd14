#!/usr/bin/env bash
# Session 38: the compile-ahead processes write every plan they build, and the tuning process loads those it
# reaches instead of compiling them (new, build/bin/ios) against processes that only fill the driver's JIT cache
# (base, build/bin/ios_base); both with the default --compile-ahead (auto). The GPU tests of compile-ahead and
# the kernel cache first; then Inception V3 tf32 IOS-Both searches as a machine's first tf32 process (an empty
# driver JIT cache and kernel cache each), alternated over ROUNDS rounds; the search again from new's last
# kernel cache (its plans kept for later processes); NasNet tf32 once each, new first.   plans_ahead.sh OUT [ROUNDS]
set -uo pipefail
o=$1; rounds=${2:-3}; mkdir -p "$o"; keep=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuCompileAhead.*:GpuKernelCache.*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc $?: $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED|compile ahead\]' "$o/gpu_tests.log" | tr '\n' ' ')"
search() {  # variant net round kernel-cache-dir
  local bin=build/bin/ios; [ "$1" = base ] && bin=build/bin/ios_base
  CUDA_CACHE_PATH=$4/jit /usr/bin/time -f "%e s wall" timeout 150 $bin optimize --model "$2" --opt ios-both \
    --precision tf32 --cost-model measured --kernel-cache "$4/kc.json" --out "$o/$2_$1_$3.json" \
    > "$o/search_$2_$1_$3.log" 2>&1
  echo "$2 $1 $3 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/search_$2_$1_$3.log" | tr '\n' ' ')"
  grep -E "^Kernels|^Fidelity:" "$o/search_$2_$1_$3.log" | cut -c1-330
}
for r in $(seq 1 "$rounds"); do
  order="base new"; [ $((r % 2)) = 0 ] && order="new base"
  for v in $order; do
    k=$(mktemp -d); search $v inception_v3 $r "$k"
    if [ "$r" = "$rounds" ] && [ $v = new ]; then cp -r "$k/." "$keep/"; fi
    rm -rf "$k"
  done
done
search new inception_v3 research "$keep"
echo "plan files kept: $(ls "$keep/kc.json.plans" 2>/dev/null | wc -l)"
rm -rf "$keep"
for v in new base; do k=$(mktemp -d); search $v nasnet 1 "$k"; rm -rf "$k"; done
ls /tmp | grep -c ios_compile_ahead_ | sed 's/^/compile-ahead files left in \/tmp: /'
