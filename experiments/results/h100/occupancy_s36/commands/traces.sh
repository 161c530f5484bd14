#!/usr/bin/env bash
# Session 36: CUPTI traces for an occupancy bound (issue #14): each network's sequential schedule (every
# kernel alone on the GPU) and its IOS-Both schedule in dataflow mode, tf32 and fp32; then exp_latency,
# every policy in both modes, tf32, the three small networks, with the output-copy binaries.   traces.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d); s=experiments/results/h100/output_copy_s36
N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for case in inception_v3:tf32:$s/run3/inception_v3_tf32_new.json googlenet:tf32:$s/run1/googlenet_tf32_new.json \
            inception_v3:fp32:- googlenet:fp32:-; do
  IFS=: read -r net p sched <<< "$case"; t=${net}_$p
  timeout 120 $N run --model $net --opt sequential --precision $p --exec staged --iters 300 \
    --kernel-cache "$k/kc.json" --trace "$o/seq_$t.json" > "$o/seq_$t.log" 2>&1
  echo "sequential $t rc $?: $(grep -E 'Latency|Utilization' "$o/seq_$t.log" | cut -c1-140 | tr '\n' ' ')"
  if [ "$sched" = - ]; then
    timeout 120 $N optimize --model $net --opt ios-both --precision $p --cost-model measured \
      --kernel-cache "$k/kc.json" --out "$o/$t.json" > "$o/search_$t.log" 2>&1
    echo "search $t rc $?: $(grep -E 'Optimization cost' "$o/search_$t.log" | cut -c1-120)"
    sched=$o/$t.json
  fi
  timeout 120 $N run --schedule "$sched" --model $net --precision $p --exec dataflow --iters 300 \
    --kernel-cache "$k/kc.json" --trace "$o/df_$t.json" > "$o/df_$t.log" 2>&1
  echo "dataflow $t rc $?: $(grep -E 'Latency|Utilization' "$o/df_$t.log" | cut -c1-140 | tr '\n' ' ')"
done
timeout 300 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
  --exec staged,dataflow --precision tf32 --cost-model measured --kernel-cache "$k/kc.json" --rounds 3 \
  --out-dir "$o/exp" > "$o/exp.log" 2>&1
echo "exp rc $?"; grep -E "^Model|Critical" "$o/exp.log"
xz -9 "$o"/*.json
