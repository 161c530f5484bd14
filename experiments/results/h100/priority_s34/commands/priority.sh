#!/usr/bin/env bash
# Session 34: critical-path kernel priorities in dataflow CUDA graphs (each launch's kernels get the device's
# highest stream priority less its slack class), and the stage boundary measured behind a head start that
# grows until the GPU has not reached the first span when the last is queued.
# 1. GPU tests of the priorities, the lead kernel, the boundary and the measured cost model;
# 2. exp_latency on Inception V3, GoogLeNet, SqueezeNet at tf32 and fp32: Greedy, IOS-Both, Opara, each staged,
#    dataflow, dataflow+priority, dataflow-free, dataflow-free+priority, one process per precision, interleaved;
# 3. Inception V3 tf32 IOS-Both searches: the boundary taken off and measured / predicted.
# From the repository root on the GPU machine:  priority.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cache=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/lead1/kernel_cache.json.xz > "$cache"
export IOS_KERNEL_CACHE=$cache
timeout 150 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.CriticalPath*:PrioritySuffix*:GpuRuntime.ALeadKernel*:GpuRuntime.TheStageBoundary*:GpuRuntime.MeasuredCostModel*:GpuRuntime.Sibling*' \
  > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?"; grep -E "boundary\]|FAILED|PASSED|Failure" "$o/gpu_tests.log" | head -20
for p in tf32 fp32; do
  timeout 170 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt greedy,ios-both,opara \
    --exec staged,dataflow,dataflow+priority,dataflow-free,dataflow-free+priority --cost-model measured \
    --precision $p --rounds 5 --out-dir "$o/latency_$p" > "$o/latency_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model|^Critical" "$o/latency_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
fidelity() { grep -E '^Fidelity' "$1" | sed -E 's/ \(sum of its (stages|segments)\)//; s/ \(CUDA graph, median of 200\)//' | cut -c1-150 | tr '\n' ' '; }
for i in 1 2 3; do
  timeout 60 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
    --quiet --kernel-cache "$cache" --out "$o/iv3_tf32_$i.json" > "$o/iv3_tf32_$i.log" 2>&1
  echo "iv3 tf32 $i: $(fidelity "$o/iv3_tf32_$i.log") $(grep -oE 'less the stage boundary, [0-9.]+ us a replay' "$o/iv3_tf32_$i.log")"
done
rm -f "$cache"
