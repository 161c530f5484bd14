#!/usr/bin/env bash
# Session 13 (issue #10): is the slow cuDNN kernel of replay_diag.sh slow on its own (address or data)
# or only beside other kernels? Nsight Compute serialises kernels and flushes caches before each, so it
# times every implicit-GEMM convolution of one NasNet inference alone, for two schedules.
# From the repository root on the GPU machine; output $OUT/ncu_*.csv.
set -uo pipefail
S=experiments/results/h100/search_s13/rules_nasnet
cp kernel_cache.json /tmp/kc.json
export IOS_KERNEL_CACHE=/tmp/kc.json
metrics=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
for rule in rule2 rule4; do
  timeout 270 ncu --kernel-name regex:fprop_implicit_gemm --metrics "$metrics" --csv --print-units base \
    build/bin/ios run --model nasnet --schedule "$S/nasnet_$rule.json" --warmup 0 --iters 1 > "$OUT/ncu_$rule.csv" 2> "$OUT/ncu_$rule.err"
  echo "$rule: rc $? $(wc -l < "$OUT/ncu_$rule.csv") lines"
done
