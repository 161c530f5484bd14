#!/usr/bin/env bash
# Session 36: with output copies, are the runtime-compiled engines still worth their compile time? On a machine
# just started: Inception V3 tf32 IOS-Both searched first with --conv-engine graph, then with the default
# (graph-rtc), each from an empty kernel cache; then fixed schedules run both ways, alternated, --check.
#   engines.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d); s=experiments/results/h100/output_copy_s36
N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for e in graph graph-rtc; do
  timeout 150 $N optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --conv-engine $e \
    --kernel-cache "$k/kc_search_$e.json" --out "$o/iv3_$e.json" > "$o/search_iv3_$e.log" 2>&1
  echo "search $e rc $?: $(grep -E 'Optimization cost' "$o/search_iv3_$e.log" | cut -c1-120)"
  grep -E "^Fidelity|engines tuned" "$o/search_iv3_$e.log" | cut -c1-200
done
timeout 100 $N optimize --model squeezenet --opt ios-both --precision tf32 --cost-model measured \
  --kernel-cache "$k/kc_sq.json" --out "$o/squeezenet_tf32.json" > "$o/search_squeezenet.log" 2>&1
echo "search squeezenet rc $?"
for case in inception_v3:tf32:$s/run3/inception_v3_tf32_new.json googlenet:tf32:$s/run1/googlenet_tf32_new.json \
            squeezenet:tf32:$o/squeezenet_tf32.json inception_v3:fp16:$s/run1/inception_v3_fp16_new.json; do
  IFS=: read -r net p sched <<< "$case"; t=${net}_$p
  for r in 1 2 3; do
    for e in graph graph-rtc; do
      timeout 90 $N run --schedule "$sched" --model $net --precision $p --exec auto --iters 1000 --check --conv-engine $e \
        --kernel-cache "$k/kc_${t}_$e.json" > "$o/run_${t}_${e}_$r.log" 2>&1
      echo "$t $e round $r rc $?: $(grep -E 'Exec auto|Latency|Check' "$o/run_${t}_${e}_$r.log" | cut -c1-100 | tr '\n' ' ')"
    done
  done
  for e in graph graph-rtc; do grep -E "^Convolutions" "$o/run_${t}_${e}_1.log" | cut -c1-230; done
done
