#!/usr/bin/env bash
# Session 36: the new binary's Inception V3 tf32 search with every candidate's time (--verbose), its
# schedule traced in dataflow mode; the base binary's trace of its own search beside it.   verbose.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
for v in base new; do
  bin=build/bin/ios_base; [ $v = new ] && bin=build/bin/ios
  timeout 150 $bin optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --verbose \
    --kernel-cache "$k/kc_$v.json" --out "$o/iv3_$v.json" > "$o/search_iv3_$v.log" 2>&1
  echo "search $v rc $?: $(grep -E 'Optimization cost|Convolutions' "$o/search_iv3_$v.log" | cut -c1-300 | tr '\n' ' ')"
  timeout 60 $bin run --schedule "$o/iv3_$v.json" --model inception_v3 --precision tf32 --exec dataflow --iters 300 \
    --kernel-cache "$k/kc_$v.json" --trace "$o/trace_iv3_$v.json" > "$o/trace_iv3_$v.log" 2>&1
  echo "trace $v rc $?: $(grep -E 'Latency|Utilization' "$o/trace_iv3_$v.log" | cut -c1-200 | tr '\n' ' ')"
done
xz -9 "$o"/trace_*.json "$o"/search_*.log
