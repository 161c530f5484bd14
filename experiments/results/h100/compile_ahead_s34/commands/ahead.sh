#!/usr/bin/env bash
# Session 34: --compile-ahead (processes compiling the network's runtime-compiled cuDNN engines while the search
# tunes them). Inception V3 and NasNet tf32 IOS-Both searched as a machine's first tf32 process would be (each
# search with an empty driver JIT cache of its own, CUDA_CACHE_PATH, and an empty kernel cache), with
# --compile-ahead 0 and the default (auto), alternated; each schedule run end to end. GPU tests first. Then the
# cost where nothing is left to compile: Inception V3 searched again from the last search's kernel cache and JIT
# cache, --compile-ahead 0 and auto alternated (run 2: the helpers take the network last to first; run 3: they start at the first convolution tuned; run 4: and stop once the calibration's network is built).
# From the repository root on the GPU machine:  ahead.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
nproc | sed 's/^/cores: /'
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuCompileAhead*:GpuKernelCache*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]|compile ahead\]' "$o/gpu_tests.log" | tr '\n' ' ')"
search() {  # model ahead tag
  CUDA_CACHE_PATH=$o/jit_$3 /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model $1 \
    --opt ios-both --precision tf32 --cost-model measured --quiet --compile-ahead $2 --kernel-cache "$o/kc_$3.json" \
    --out "$o/$3.json" > "$o/$3.log" 2>&1
  echo "$3: $(grep -oE 'Optimization cost: [0-9.]+ sec|[0-9]+ engines tuned in [0-9.]+ s|[0-9.]+ s compiling at run time|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$3.log" | tr '\n' ' ') left running: $(pgrep -fc 'ios compile-ahead')"
}
search inception_v3 0 iv3_off_1
search inception_v3 auto iv3_on_1
search nasnet 0 nasnet_off
search nasnet auto nasnet_on
search inception_v3 auto iv3_on_2
search inception_v3 0 iv3_off_2
again() {  # ahead tag
  CUDA_CACHE_PATH=$o/jit_iv3_on_2 /usr/bin/time -f "%e s wall" timeout 60 build/bin/ios optimize --model inception_v3 \
    --opt ios-both --precision tf32 --cost-model measured --quiet --compile-ahead $1 --kernel-cache "$o/kc_iv3_on_2.json" \
    > "$o/$2.log" 2>&1
  echo "$2: $(grep -oE 'Optimization cost: [0-9.]+ sec|[0-9]+ engines tuned in [0-9.]+ s|[0-9.]+ s wall' "$o/$2.log" | tr '\n' ' ') left running: $(pgrep -fc 'ios compile-ahead')"
}
again 0 cached_off_1; again auto cached_on_1; again 0 cached_off_2; again auto cached_on_2
rm -rf "$o"/jit_* "$o"/kc_*
