#!/usr/bin/env bash
# Session 13 (issue #10): why one searched NasNet schedule runs slower in `ios run` than in the search that
# chose it. From the repository root on the GPU machine (binaries in build/bin, kernel_cache.json from
# the search): three schedules run end to end, engines from the kernel cache file or tuned in the
# process (--kernel-cache none) or with CUDA_MODULE_LOADING=EAGER, two interleaved rounds, then one CUPTI
# trace of each kind. Output: $OUT/replay.tar.gz.
set -uo pipefail
S=experiments/results/h100/search_s13/rules_nasnet
O=$OUT/replay
mkdir -p $O
cp kernel_cache.json /tmp/kc.json
export IOS_KERNEL_CACHE=/tmp/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $O/gpu.txt
run() { # LABEL ARGS...
  local label=$1; shift
  timeout 200 build/bin/ios run --model nasnet --iters 1000 "$@" > $O/$label.log 2>&1
  echo "$label: $(grep -E '^Latency' $O/$label.log) [$(grep -oE 'engines tuned [0-9]+, from the kernel cache file [0-9]+' $O/$label.log)]" | tee -a $O/summary.log
}
for round in 1 2; do
  run r2_file_$round --schedule $S/nasnet_rule2.json
  run r4_file_$round --schedule $S/nasnet_rule4.json
  CUDA_MODULE_LOADING=EAGER run r2_eager_$round --schedule $S/nasnet_rule2.json
  run r2_tuned_$round --schedule $S/nasnet_rule2.json --kernel-cache none
  run r3_file_$round --schedule $S/nasnet_rule3.json
done
run r2_trace --schedule $S/nasnet_rule2.json --trace $O/r2_file.trace.json
run r4_trace --schedule $S/nasnet_rule4.json --trace $O/r4_file.trace.json
run r2_tuned_trace --schedule $S/nasnet_rule2.json --kernel-cache none --trace $O/r2_tuned.trace.json
tar czf $OUT/replay.tar.gz -C $OUT replay && rm -rf $O
