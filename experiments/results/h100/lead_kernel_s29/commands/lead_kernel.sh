#!/usr/bin/env bash
# Session 29: stages timed behind a lead kernel, less a graph of it alone (ExecutorOptions::lead_kernel),
# against the figures before (base/: commit 8df7670, graph launch less 2 t1 - t2).
# 1. GPU tests of the lead kernel, the measured cost model and the boundary;
# 2. measured IOS-Both searches, base and lead alternating, one kernel cache (session 29's first one):
#    predicted against measured latency;
# 3. GoogLeNet tf32 with lead: stage cache and CUPTI timeline for experiments/stage_windows.py;
# 4. every policy at tf32 and fp32, staged and dataflow, one process each (exp_latency, lead).
# From the repository root on the GPU machine:  lead_kernel.sh OUT   (binaries under build/bin, base/)
set -uo pipefail
o=$1
mkdir -p "$o/base" "$o/lead" "$o/windows"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cache=$o/kernel_cache.json
xz -dc experiments/results/h100/merge_copies_s29/mc/kernel_cache.json.xz > "$cache"
export IOS_KERNEL_CACHE=$cache
timeout 150 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.ALeadKernel*:GpuRuntime.MeasuredCostModel*:GpuRuntime.TheStageBoundary*:GpuRuntime.ColdShare*:GpuRuntime.SiblingWorkers*:GpuRuntime.Screened*' \
  > "$o/gpu_tests_lead.log" 2>&1
echo "gpu tests rc $?"; grep -E "boundary\]|FAILED|PASSED|Failure" "$o/gpu_tests_lead.log"
for cfg in "googlenet tf32" "inception_v3 tf32" "squeezenet tf32" "googlenet fp32" "inception_v3 fp32" "squeezenet fp32"; do
  set -- $cfg
  for v in base lead; do
    bin=build/bin/ios; [ $v = base ] && bin=build/bin/base/ios
    timeout 100 $bin optimize --model $1 --opt ios-both --precision $2 --cost-model measured --quiet \
      --kernel-cache "$cache" --out "$o/$v/$1_$2.json" > "$o/$v/$1_$2.log" 2>&1
    echo "$v $1 $2: $(grep -E '^Fidelity' "$o/$v/$1_$2.log" | sed -E 's/ \(sum of its (stages|segments)\)//; s/ \(CUDA graph, median of 200\)//' | cut -c1-150 | tr '\n' ' ')"
  done
done
w=$o/windows
timeout 60 build/bin/ios optimize --model googlenet --opt ios-both --precision tf32 --cost-model measured --quiet \
  --stage-cache "$w/googlenet_stages.json" --out "$w/googlenet.json" > "$w/googlenet_search.log" 2>&1
timeout 60 build/bin/ios run --model googlenet --precision tf32 --schedule "$w/googlenet.json" --exec staged \
  --iters 1000 --trace "$w/googlenet_trace.json" > "$w/googlenet_run.log" 2>&1
grep -E "^Fidelity:|^Latency" "$w/googlenet_search.log" "$w/googlenet_run.log" | cut -c1-160
for p in tf32 fp32; do
  timeout 200 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
    --exec staged,dataflow --cost-model measured --precision $p --rounds 3 --out-dir "$o/lead/policies_$p" \
    > "$o/lead/policies_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model|^Critical" "$o/lead/policies_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
