#!/usr/bin/env bash
# Does any cuDNN engine write a strided NHWC slice without its nhwcSliceCKernel copies? (session 27)
# The in-place tf32 IOS-Both schedules of conv_copy/, tuned with graph-exhaustive (every engine and
# split-K variant timed on the real strided buffers) in a kernel cache of their own, then run against the
# default tuning (graph: heuristics' candidates, TuningBudget), alternating; one CUPTI trace each.
# From the repository root on the GPU machine:  exhaustive.sh OUT DEFAULT_KERNEL_CACHE
set -uo pipefail
out=$1
mkdir -p "$out"
sched=experiments/results/h100/concat_writes_s27/conv_copy
census=experiments/results/h100/concat_writes_s27/commands/census.py
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
for net in googlenet inception_v3; do
  run() {  # engine cache tag extra-flags...
    local engine=$1 cache=$2 tag=$3; shift 3
    timeout 400 build/bin/ios run --model $net --schedule "$sched/${net}_tf32_in-place.json" --precision tf32 \
      --conv-engine "$engine" --kernel-cache "$cache" "$@" > "$out/${net}_$tag.log" 2>&1
    echo "${net}_$tag: $(grep -E '^Exec auto|^Latency|^Check|^Convolutions' "$out/${net}_$tag.log" | cut -c1-170 | tr '\n' ' ')"
  }
  run graph-exhaustive "$out/kc_exhaustive.json" tune --exec auto --check
  for rep in 1 2; do
    run graph "$2" graph_$rep --exec auto --iters 1000
    run graph-exhaustive "$out/kc_exhaustive.json" exhaustive_$rep --exec auto --iters 1000
  done
  for engine in graph graph-exhaustive; do
    cache=$2; [ $engine = graph ] || cache=$out/kc_exhaustive.json
    run $engine "$cache" ${engine}_trace --exec staged --iters 50 --trace "$out/${net}_${engine}_trace.json"
    python3 $census "$out/${net}_${engine}_trace.json" | tee -a "$out/kernel_census.txt"
  done
done
