#!/usr/bin/env bash
# First GPU runs of --concat-writes conv-copy (session 26; issues #10 and #14), sized for one device call.
# From the repository root on the GPU machine, binaries in build/bin:
#   run_concat_writes.sh OUT
# 1. GpuRuntime.ConvolutionsLeftToTheirConcatenationsMatchTheReference (Inception V3, every precision,
#    staged and dataflow, both ways of writing concatenations, against the CPU reference);
# 2. per network and precision, measured IOS-Both searches with in-place and conv-copy, alternating, each
#    schedule run by `ios run --concat-writes auto --exec auto --check`: both ways timed interleaved in
#    one process (its "Exec auto" line), the faster kept and checked.
set -uo pipefail
out=${1:-experiments/results/latest}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.ConvolutionsLeft*' 2>&1 | tee "$out/gpu_test.log" |
  grep -E "^\[  (PASSED|FAILED)|\[conv-copy\]"
for cfg in "inception_v3 tf32" "googlenet tf32" "inception_v3 fp16" "googlenet fp16"; do
  set -- $cfg
  for writes in in-place conv-copy; do
    tag=$1_$2_$writes
    timeout 60 build/bin/ios optimize --model "$1" --opt ios-both --precision "$2" --cost-model measured --quiet \
      --concat-writes "$writes" --out "$out/$tag.json" > "$out/${tag}_optimize.log" 2>&1
    echo "$tag: $(grep -E '^Fidelity' "$out/${tag}_optimize.log" | cut -c1-160 | tr '\n' ' ')"
    timeout 90 build/bin/ios run --model "$1" --schedule "$out/$tag.json" --precision "$2" --concat-writes auto \
      --exec auto --check --iters 1000 > "$out/${tag}_run.log" 2>&1
    echo "  $(grep -E '^Exec auto|^Latency|^Check' "$out/${tag}_run.log" | tr '\n' ' ')"
  done
done
