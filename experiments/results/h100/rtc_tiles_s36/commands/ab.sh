#!/usr/bin/env bash
# Session 36: runtime-compiled engines' kernel-shape knobs tuned on strided slices (new) against main (base).
# Inception V3 and GoogLeNet tf32 IOS-Both, measured searches from empty kernel caches (a throwaway search
# first so that neither pays the machine's first tf32 JIT), then each schedule run with its own cache,
# alternated, both modes, checked; one CUPTI trace each; exp_latency (new) for the bound.   ab.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
B=build/bin/ios_base; N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 120 $B optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --quiet \
  --kernel-cache "$o/kc_warm.json" --out "$o/warm.json" > "$o/warm.log" 2>&1; echo "warm rc $?"
for net in inception_v3 googlenet; do
  for v in base new; do
    bin=$B; [ $v = new ] && bin=$N
    timeout 150 $bin optimize --model $net --opt ios-both --precision tf32 --cost-model measured --quiet --verbose \
      --kernel-cache "$o/kc_${net}_$v.json" --out "$o/${net}_$v.json" > "$o/search_${net}_$v.log" 2>&1
    echo "search $net $v rc $?: $(grep -E '^(Optimization cost|Convolutions)' "$o/search_${net}_$v.log" | cut -c1-220 | tr '\n' ' ')"
    grep -E "^Fidelity" "$o/search_${net}_$v.log" | cut -c1-160
  done
  for r in 1 2 3; do
    for v in base new; do
      bin=$B; [ $v = new ] && bin=$N
      timeout 60 $bin run --schedule "$o/${net}_$v.json" --model $net --precision tf32 --exec auto --iters 1000 --check \
        --kernel-cache "$o/kc_${net}_$v.json" > "$o/run_${net}_${v}_$r.log" 2>&1
      echo "run $net $v $r rc $?: $(grep -E 'Latency|staged|dataflow|error' "$o/run_${net}_${v}_$r.log" | cut -c1-150 | tr '\n' ' ')"
    done
  done
  for v in base new; do
    bin=$B; [ $v = new ] && bin=$N
    timeout 60 $bin run --schedule "$o/${net}_$v.json" --model $net --precision tf32 --exec dataflow --iters 300 \
      --kernel-cache "$o/kc_${net}_$v.json" --trace "$o/trace_${net}_$v.json" > "$o/trace_${net}_$v.log" 2>&1
    echo "trace $net $v rc $?: $(grep -E 'Utilization' "$o/trace_${net}_$v.log" | cut -c1-200)"
  done
done
timeout 200 build/bin/exp_latency --model inception_v3,googlenet --opt greedy,ios-both --exec staged,dataflow \
  --precision tf32 --cost-model measured --kernel-cache "$o/kc_exp.json" --rounds 3 --out-dir "$o/exp" > "$o/exp.log" 2>&1
echo "exp rc $?"; tail -25 "$o/exp.log"
rm -rf "$o"/kc_warm.json* 
xz -9 "$o"/trace_*.json "$o"/search_*.log 2>/dev/null
