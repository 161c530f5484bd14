#!/usr/bin/env bash
# Session 30: does a network run slower when its convolution plans were built on build threads (another
# cuDNN handle) than on the tuning thread? Inception V3 tf32, the sequential schedule and a fixed IOS-Both
# schedule, each tuned from an empty kernel cache with --build-threads 0 and -1, alternating, N rounds.
#   run_latency.sh OUT N
set -uo pipefail
o=$1 n=${2:-3}
sched=experiments/results/h100/build_threads_s30/iv3_tf32_schedule.json
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for i in $(seq 1 "$n"); do
  for t in 0 -1; do
    for what in seq ios; do
      if [ $what = seq ]; then flags="--opt sequential"; else flags="--schedule $sched"; fi
      timeout 120 build/bin/ios run --model inception_v3 --precision tf32 $flags --kernel-cache none \
        --build-threads $t --iters 500 > "$o/${what}_t${t}_$i.log" 2>&1
      echo "$what threads $t #$i: $(grep -E '^Latency: ' "$o/${what}_t${t}_$i.log" | head -2 | tr '\n' ' ')"
    done
  done
done
