#!/usr/bin/env bash
# NCHW against NHWC at tf32 and fp16 (session 27): in NHWC a channel slice is strided and cuDNN wraps each
# convolution writing one in copy kernels; in NCHW at batch 1 the slice is dense. The IOS-Both schedules of
# conv_copy/ (in-place searches), run in both layouts, alternating, twice each; one CUPTI trace per layout.
# From the repository root on the GPU machine, binaries in build/bin:  layouts.sh OUT [KERNEL_CACHE]
set -uo pipefail
out=$1
mkdir -p "$out"
export IOS_KERNEL_CACHE=${2:-$out/kernel_cache.json}
sched=experiments/results/h100/concat_writes_s27/conv_copy
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
for cfg in "inception_v3 tf32" "googlenet tf32" "inception_v3 fp16" "googlenet fp16"; do
  set -- $cfg
  for rep in 1 2; do
    for layout in nhwc nchw; do
      tag=$1_$2_${layout}_$rep
      timeout 120 build/bin/ios run --model "$1" --schedule "$sched/$1_$2_in-place.json" --precision "$2" \
        --layout "$layout" --exec auto --check --iters 1000 > "$out/$tag.log" 2>&1
      echo "$tag: $(grep -E '^Exec auto|^Latency|^Check' "$out/$tag.log" | cut -c1-150 | tr '\n' ' ')"
    done
  done
done
for layout in nhwc nchw; do
  timeout 120 build/bin/ios run --model inception_v3 --schedule "$sched/inception_v3_tf32_in-place.json" \
    --precision tf32 --layout "$layout" --exec staged --iters 50 --trace "$out/inception_v3_tf32_${layout}_trace.json" \
    > "$out/inception_v3_tf32_${layout}_trace.log" 2>&1
  python3 experiments/results/h100/concat_writes_s27/commands/census.py "$out/inception_v3_tf32_${layout}_trace.json" |
    tee -a "$out/kernel_census.txt"
done
