#!/usr/bin/env bash
# Session 29: merge stages timed with the copies their concatenations make (sched::compile_timed_stages).
# 1. the new GPU test and the measured-cost-model GPU tests;
# 2. first-process measured IOS-Both searches, before (old/, main 810ca72) and after (this commit),
#    alternating, one kernel cache: search time, predicted vs measured latency;
# 3. every policy at tf32, staged and dataflow, one process each, after and before (exp_latency).
# From the repository root on the GPU machine:  merge_copies.sh OUT   (binaries under build/bin, old/)
set -uo pipefail
o=$1
mkdir -p "$o/old" "$o/new"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cache=$o/kernel_cache.json
export IOS_KERNEL_CACHE=$cache
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.MeasuredCostModel*' > "$o/gpu_tests_measured.log" 2>&1
echo "gpu tests rc $?"; grep -E "merge in place|OK|FAILED|PASSED" "$o/gpu_tests_measured.log"
for cfg in "inception_v3 tf32" "googlenet tf32" "inception_v3 fp16"; do
  set -- $cfg
  for v in old new; do
    bin=build/bin/ios; [ $v = old ] && bin=build/bin/old/ios
    /usr/bin/time -f "%e s wall" timeout 120 $bin optimize --model $1 --opt ios-both --precision $2 \
      --cost-model measured --quiet --kernel-cache "$cache" --out "$o/$v/$1_$2.json" > "$o/$v/$1_$2.log" 2>&1
    echo "$v $1 $2: $(grep -E '^Fidelity|wall' "$o/$v/$1_$2.log" | cut -c1-200 | tr '\n' ' ')"
  done
done
for v in new old; do
  bin=build/bin/exp_latency; [ $v = old ] && bin=build/bin/old/exp_latency
  timeout 240 $bin --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
    --exec staged,dataflow --cost-model measured --precision tf32 --rounds 3 --out-dir "$o/$v/policies_tf32" \
    > "$o/$v/policies_tf32.log" 2>&1
  echo "$v exp_latency rc $?"
  grep -E "^Model|^Critical" "$o/$v/policies_tf32.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
