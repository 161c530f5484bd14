#!/usr/bin/env bash
# Session 37: #10's policy target with the final binaries at the precisions whose tuning compiles at run time:
# every policy in both modes on the three small networks, one exp_latency process per precision, 3 interleaved
# rounds, checked against the CPU reference.   policy.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for p in tf32 fp16; do
  timeout 250 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
    --exec staged,dataflow --precision $p --cost-model measured --kernel-cache "$k/kc.json" --rounds 3 \
    --out-dir "$o/exp_$p" > "$o/exp_$p.log" 2>&1
  echo "exp $p rc $?"; grep -E "^Model|Critical" "$o/exp_$p.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
done
