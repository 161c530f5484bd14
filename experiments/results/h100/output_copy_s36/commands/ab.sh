#!/usr/bin/env bash
# Session 36: precompiled engines writing a packed tensor that our kernel copies into the strided slice
# (new) against main (base). GPU tests first; then per network x precision a measured IOS-Both search with
# each binary from an empty kernel cache (a throwaway search first, so neither pays the machine's first
# JIT), each schedule run with its own cache, alternated, --exec auto --check; a CUPTI trace of each in
# dataflow mode; exp_latency (new) for the critical-path bound.   ab.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d)
B=build/bin/ios_base; N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache.*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -10
timeout 120 $B optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --quiet \
  --kernel-cache "$k/kc_warm.json" --out "$k/warm.json" > /dev/null 2>&1; echo "warm rc $?"
for case in inception_v3:tf32 googlenet:tf32 inception_v3:fp16; do
  net=${case%:*}; p=${case#*:}; t=${net}_$p
  for v in base new; do
    bin=$B; [ $v = new ] && bin=$N
    timeout 150 $bin optimize --model $net --opt ios-both --precision $p --cost-model measured \
      --kernel-cache "$k/kc_${t}_$v.json" --out "$o/${t}_$v.json" > "$o/search_${t}_$v.log" 2>&1
    echo "search $t $v rc $?: $(grep -E 'Optimization cost' "$o/search_${t}_$v.log" | cut -c1-150)"
    grep -E "^Fidelity" "$o/search_${t}_$v.log" | cut -c1-150
  done
  for r in 1 2 3; do
    for v in base new; do
      bin=$B; [ $v = new ] && bin=$N
      timeout 60 $bin run --schedule "$o/${t}_$v.json" --model $net --precision $p --exec auto --iters 1000 --check \
        --kernel-cache "$k/kc_${t}_$v.json" > "$o/run_${t}_${v}_$r.log" 2>&1
      echo "run $t $v $r rc $?: $(grep -E 'Exec auto|Latency|Check' "$o/run_${t}_${v}_$r.log" | cut -c1-110 | tr '\n' ' ')"
    done
  done
  grep -E "^Convolutions" "$o/run_${t}_new_1.log" | cut -c1-200
  for v in base new; do
    bin=$B; [ $v = new ] && bin=$N
    timeout 60 $bin run --schedule "$o/${t}_$v.json" --model $net --precision $p --exec dataflow --iters 300 \
      --kernel-cache "$k/kc_${t}_$v.json" --trace "$o/trace_${t}_$v.json" > "$o/trace_${t}_$v.log" 2>&1
    echo "trace $t $v rc $?: $(grep -E 'Utilization' "$o/trace_${t}_$v.log" | cut -c1-150) slices $(grep -o nhwcSliceCKernel "$o/trace_${t}_$v.json" | wc -l)"
  done
done
timeout 150 build/bin/exp_latency --model inception_v3 --opt greedy,ios-both --exec staged,dataflow --precision tf32 \
  --cost-model measured --kernel-cache "$k/kc_inception_v3_tf32_new.json" --rounds 3 --out-dir "$o/exp" > "$o/exp.log" 2>&1
echo "exp rc $?"; grep -E "^Model|Critical" "$o/exp.log"
xz -9 "$o"/trace_*.json
