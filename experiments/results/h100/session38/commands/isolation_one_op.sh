#!/usr/bin/env bash
# Session 38, second form of the isolation correction: the calibration's excess taken off one-op stages only
# (build/bin/*_iso1), against main (build/bin/*), as isolation.sh: every policy in both modes, one exp_latency
# process per binary and precision, 3 interleaved rounds, checked against the CPU reference, the kernel cache
# shared within a precision.   isolation_one_op.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
exp() {  # variant precision models
  local bin=build/bin/exp_latency; [ "$1" = iso1 ] && bin=build/bin/exp_latency_iso1
  timeout 200 $bin --model "$3" --opt sequential,greedy,ios-both,opara --exec staged,dataflow --precision "$2" \
    --cost-model measured --kernel-cache "$k/kc_$2.json" --rounds 3 --out-dir "$o/exp_$2_$1" > "$o/exp_$2_$1.log" 2>&1
  echo "exp $2 $1 rc $?"
  grep -E "^Model" "$o/exp_$2_$1.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
}
exp iso1 fp16 googlenet,inception_v3
exp base fp16 googlenet,inception_v3
exp base tf32 googlenet,inception_v3
exp iso1 tf32 googlenet,inception_v3
exp iso1 bf16 googlenet
exp base bf16 googlenet
rm -rf "$k"
