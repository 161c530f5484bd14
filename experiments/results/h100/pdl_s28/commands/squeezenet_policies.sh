#!/usr/bin/env bash
# Session 28: why IOS-Both's SqueezeNet tf32 schedule runs slower than Greedy's (0.247 vs 0.217 ms in
# search_policies.sh) although the search predicts it faster: both schedules from measured searches on
# that call's kernel cache (stage figures kept in a stage cache), listed, run staged and dataflow, and
# traced (CUPTI, staged, per-stage spans). Then Inception V3 against the CPU reference in every policy,
# mode and precision. From the repository root on the GPU machine:  squeezenet_policies.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
cp experiments/results/h100/pdl_s28/sp/kernel_cache.json "$o/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for opt in ios-both greedy; do
  timeout 120 build/bin/ios optimize --model squeezenet --opt $opt --precision tf32 --cost-model measured --quiet \
    --kernel-cache "$o/kernel_cache.json" --stage-cache "$o/stages_$opt.json" --out "$o/squeezenet_$opt.json" \
    > "$o/squeezenet_${opt}_search.log" 2>&1
  echo "$opt: $(grep -E '^Fidelity' "$o/squeezenet_${opt}_search.log" | cut -c1-200 | tr '\n' ' ')"
  timeout 30 build/bin/ios show --model squeezenet --schedule "$o/squeezenet_$opt.json" > "$o/squeezenet_${opt}_stages.txt" 2>&1
  for ex in staged dataflow; do
    timeout 60 build/bin/ios run --model squeezenet --schedule "$o/squeezenet_$opt.json" --precision tf32 --exec $ex \
      --kernel-cache "$o/kernel_cache.json" --check --iters 500 > "$o/squeezenet_${opt}_$ex.log" 2>&1
    echo "$opt $ex: $(grep -E '^Latency|^Check' "$o/squeezenet_${opt}_$ex.log" | cut -c1-80 | tr '\n' ' ')"
  done
  timeout 60 build/bin/ios run --model squeezenet --schedule "$o/squeezenet_$opt.json" --precision tf32 --exec staged \
    --kernel-cache "$o/kernel_cache.json" --iters 50 --trace "$o/squeezenet_${opt}_trace.json" > "$o/trace_$opt.log" 2>&1
done
timeout 300 build/bin/ios_gpu_tests --gtest_filter='*GpuMatchesReference*inception_v3*' > "$o/gpu_tests_inception_v3.log" 2>&1
echo "inception_v3 reference tests rc $?"; tail -n 3 "$o/gpu_tests_inception_v3.log"
