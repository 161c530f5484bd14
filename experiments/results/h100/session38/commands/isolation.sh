#!/usr/bin/env bash
# Session 38: the per-stage isolation correction (branch attempt/isolation-excess, build/bin/*_iso) against
# main (build/bin/*): every policy in both modes, one exp_latency process per binary and precision, 3
# interleaved rounds, checked against the CPU reference; base and iso alternate which goes first. The kernel
# cache is shared within a precision, so the kernels are the same for both.   isolation.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
exp() {  # variant precision models
  local bin=build/bin/exp_latency; [ "$1" = iso ] && bin=build/bin/exp_latency_iso
  timeout 200 $bin --model "$3" --opt sequential,greedy,ios-both,opara --exec staged,dataflow --precision "$2" \
    --cost-model measured --kernel-cache "$k/kc_$2.json" --rounds 3 --out-dir "$o/exp_$2_$1" > "$o/exp_$2_$1.log" 2>&1
  echo "exp $2 $1 rc $?"
  grep -E "^Model" "$o/exp_$2_$1.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
}
search() {  # variant precision model: ios optimize prints the calibration (the isolation excess) and fidelity
  local bin=build/bin/ios; [ "$1" = iso ] && bin=build/bin/ios_iso
  timeout 100 $bin optimize --model "$3" --opt ios-both --precision "$2" --cost-model measured \
    --kernel-cache "$k/kc_$2.json" --out "$o/$3_$2_$1.json" > "$o/search_$3_$2_$1.log" 2>&1
  echo "search $3 $2 $1 rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec \| Latency: [0-9.]+ ms' "$o/search_$3_$2_$1.log")"
  grep -oE "cold share [0-9]+ %[^|]*" "$o/search_$3_$2_$1.log"
  grep -E "^Fidelity" "$o/search_$3_$2_$1.log" | cut -c1-200
}
exp base fp16 googlenet,inception_v3
exp iso fp16 googlenet,inception_v3
exp iso tf32 googlenet,inception_v3
exp base tf32 googlenet,inception_v3
exp base bf16 googlenet
exp iso bf16 googlenet
search iso fp16 googlenet
search base fp16 googlenet
rm -rf "$k"
