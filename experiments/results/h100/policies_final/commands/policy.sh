#!/usr/bin/env bash
# Every policy in both execution modes on Inception V3, NasNet and RandWire (IOS's graph files), one
# exp_latency process per precision (tf32, fp32), 3 interleaved rounds, checked against the CPU reference,
# kernels tuned from an empty kernel cache.   policy.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for pt in tf32:330 fp32:240; do
  IFS=: read -r p limit <<< "$pt"
  timeout $limit build/bin/exp_latency --model inception_v3,nasnet,randwire --randwire-graphs build/randwire_graphs \
    --opt sequential,greedy,ios-both,opara --exec staged,dataflow --precision $p --cost-model measured \
    --kernel-cache "$k/kc.json" --rounds 3 --out-dir "$o/exp_$p" > "$o/exp_$p.log" 2>&1
  echo "exp $p rc $?"; grep -E "^Model|Critical|relative L2|error" "$o/exp_$p.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
done
