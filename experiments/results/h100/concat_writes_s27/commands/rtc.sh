#!/usr/bin/env bash
# Graph tuning led by the engines cuDNN compiles at run time on strided slices (session 27): main before
# (build/bin/ios_base, kernel cache version 2 from conv_copy/) against the change (build/bin/ios, a fresh
# version-3 cache). 1. measured IOS-Both searches with the change, first process (search time, engines
# tuned, fidelity); 2. the in-place schedules of conv_copy/ run by both binaries, alternating, --exec auto;
# 3. a CUPTI census of the change's tf32 Inception V3; 4. the GPU tests.
# From the repository root on the GPU machine:  rtc.sh OUT BASE_KERNEL_CACHE
# Ran on commit 6741f65, where graph tuning led with these engines; since then they are opt-in: to rerun
# with a later binary, add --conv-engine graph-rtc to its ios / exp_latency commands.
set -uo pipefail
out=$1 base_cache=$2
mkdir -p "$out"
new_cache=$out/kc_new.json
sched=experiments/results/h100/concat_writes_s27/conv_copy
census=experiments/results/h100/concat_writes_s27/commands/census.py
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
for cfg in "inception_v3 tf32" "googlenet tf32" "inception_v3 fp16"; do
  set -- $cfg
  /usr/bin/time -f "%e s wall" timeout 240 build/bin/ios optimize --model $1 --opt ios-both --precision $2 \
    --cost-model measured --quiet --kernel-cache "$new_cache" --out "$out/$1_$2_search.json" > "$out/$1_$2_search.log" 2>&1
  echo "$1_$2_search: $(grep -E '^Model|^Kernels|^Fidelity|wall' "$out/$1_$2_search.log" | cut -c1-170 | tr '\n' ' ')"
done
for cfg in "inception_v3 tf32" "googlenet tf32" "inception_v3 fp16" "googlenet fp16"; do
  set -- $cfg
  for rep in 1 2; do
    for bin in ios_base ios; do
      cache=$new_cache; [ $bin = ios ] || cache=$base_cache
      tag=$1_$2_${bin}_$rep
      timeout 240 build/bin/$bin run --model $1 --schedule "$sched/$1_$2_in-place.json" --precision $2 \
        --kernel-cache "$cache" --exec auto --check --iters 1000 > "$out/$tag.log" 2>&1
      echo "$tag: $(grep -E '^Exec auto|^Latency|^Check|^Convolutions' "$out/$tag.log" | cut -c1-170 | tr '\n' ' ')"
    done
  done
done
timeout 60 build/bin/ios run --model inception_v3 --schedule "$sched/inception_v3_tf32_in-place.json" --precision tf32 \
  --kernel-cache "$new_cache" --exec staged --iters 50 --trace "$out/inception_v3_tf32_trace.json" > "$out/trace.log" 2>&1
python3 $census "$out/inception_v3_tf32_trace.json" | tee -a "$out/kernel_census.txt"
IOS_KERNEL_CACHE=$out/kc_tests.json timeout 200 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*:ConvTuning*' > "$out/gpu_tests.log" 2>&1
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests ran" "$out/gpu_tests.log"
