#!/usr/bin/env bash
# Session 36: the GPU suite on the output-copy binaries; then each schedule of run1 run by both binaries
# (each with a kernel cache of its own, tuned in its first run), alternated three times, --exec auto --check:
# what the kernels change on one schedule, apart from what the search chose.   same_schedule.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; k=$(mktemp -d); s=experiments/results/h100/output_copy_s36/run1
B=build/bin/ios_base; N=build/bin/ios
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 420 build/bin/ios_gpu_tests \
  --gtest_filter='GpuKernels*:GpuOps*:GpuRuntime*:GpuKernelCache*:*EveryPrecisionAndLayout*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$o/gpu_tests.log" | head -10
for case in inception_v3:tf32:base inception_v3:fp16:base inception_v3:fp16:new googlenet:tf32:base; do
  IFS=: read -r net p from <<< "$case"; t=${net}_$p
  for r in 1 2 3; do
    for v in base new; do
      bin=$B; [ $v = new ] && bin=$N
      timeout 90 $bin run --schedule "$s/${t}_$from.json" --model $net --precision $p --exec auto --iters 1000 --check \
        --kernel-cache "$k/kc_${t}_$v.json" > "$o/run_${t}_${from}sched_${v}_$r.log" 2>&1
      echo "$t schedule of $from, binary $v, round $r rc $?: $(grep -E 'Exec auto|Latency|Check' "$o/run_${t}_${from}sched_${v}_$r.log" | cut -c1-100 | tr '\n' ' ')"
    done
  done
done
xz -9 "$o/gpu_tests.log"
# run3 and later: the critical-path bound beside the policies (new binary).
if [ "${WITH_EXP:-0}" = 1 ]; then
  timeout 150 $N optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
    --kernel-cache "$k/kc_inception_v3_tf32_new.json" --out "$o/inception_v3_tf32_new.json" > "$o/search_inception_v3_tf32_new.log" 2>&1
  echo "search rc $?: $(grep -E 'Optimization cost' "$o/search_inception_v3_tf32_new.log" | cut -c1-150)"
  grep -E "^Fidelity" "$o/search_inception_v3_tf32_new.log" | cut -c1-150
  for r in 1 2 3; do
    for v in base new; do
      bin=$B; [ $v = new ] && bin=$N; sc=$s/inception_v3_tf32_base.json; [ $v = new ] && sc=$o/inception_v3_tf32_new.json
      timeout 90 $bin run --schedule $sc --model inception_v3 --precision tf32 --exec auto --iters 1000 --check \
        --kernel-cache "$k/kc_inception_v3_tf32_$v.json" > "$o/run_own_${v}_$r.log" 2>&1
      echo "inception_v3_tf32 own search, binary $v, round $r rc $?: $(grep -E 'Exec auto|Latency' "$o/run_own_${v}_$r.log" | cut -c1-100 | tr '\n' ' ')"
    done
  done
  timeout 150 build/bin/exp_latency --model inception_v3 --opt greedy,ios-both --exec staged,dataflow --precision tf32 \
    --cost-model measured --kernel-cache "$k/kc_inception_v3_tf32_new.json" --rounds 3 --out-dir "$o/exp" > "$o/exp.log" 2>&1
  echo "exp rc $?"; grep -E "^Model|Critical" "$o/exp.log"
fi
