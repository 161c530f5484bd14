#!/usr/bin/env bash
# Session 36: every policy in both modes on the large networks at one reduced precision (fp16 or bf16), one
# exp_latency process, 2 interleaved rounds, checked against the CPU reference.   big_table.sh OUT PRECISION
set -uo pipefail
o=$1; p=$2; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 570 build/bin/exp_latency --model nasnet,randwire,densenet121 --randwire-graphs build/randwire_graphs \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow --precision $p --cost-model measured \
  --kernel-cache "$k/kc.json" --rounds 2 --out-dir "$o/exp_$p" > "$o/exp_$p.log" 2>&1
echo "exp $p rc $?"; grep -E "^Model|Critical|searched in" "$o/exp_$p.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
