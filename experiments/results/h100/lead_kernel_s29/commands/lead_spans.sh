#!/usr/bin/env bash
# Session 29: stages timed behind a lead kernel, each span of replays less that many graphs of the lead
# alone and the event ending it (TimingLane::stage_boundary), against the figures before (base/: commit
# 8df7670, graph launch less 2 t1 - t2, a figure kept at least half its raw value).
# 1. GPU tests of the lead kernel, the measured cost model and the boundary;
# 2. measured IOS-Both searches, base and lead alternating, one kernel cache: predicted against measured;
# 3. NasNet and RandWire (IOS's graph files) with lead at tf32 and fp32: search time, predicted/measured;
# 4. every policy at tf32 and fp32, staged and dataflow, one process each (exp_latency, lead).
# From the repository root on the GPU machine:  lead_spans.sh OUT   (binaries under build/bin, base/;
# IOS's RandWire graph files under build/randwire_graphs)
set -uo pipefail
o=$1
mkdir -p "$o/base" "$o/lead"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cache=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/lead1/kernel_cache.json.xz > "$cache"
export IOS_KERNEL_CACHE=$cache
timeout 150 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.ALeadKernel*:GpuRuntime.MeasuredCostModel*:GpuRuntime.TheStageBoundary*:GpuRuntime.ColdShare*:GpuRuntime.SiblingWorkers*:GpuRuntime.Screened*' \
  > "$o/gpu_tests_lead.log" 2>&1
echo "gpu tests rc $?"; grep -E "boundary\]|FAILED|PASSED|Failure" "$o/gpu_tests_lead.log"
fidelity() { grep -E '^Fidelity' "$1" | sed -E 's/ \(sum of its (stages|segments)\)//; s/ \(CUDA graph, median of 200\)//' | cut -c1-150 | tr '\n' ' '; }
for cfg in "googlenet tf32" "inception_v3 tf32" "squeezenet tf32" "googlenet fp32" "inception_v3 fp32" "squeezenet fp32"; do
  set -- $cfg
  for v in base lead; do
    bin=build/bin/ios; [ $v = base ] && bin=build/bin/base/ios
    timeout 100 $bin optimize --model $1 --opt ios-both --precision $2 --cost-model measured --quiet \
      --kernel-cache "$cache" --out "$o/$v/$1_$2.json" > "$o/$v/$1_$2.log" 2>&1
    echo "$v $1 $2: $(fidelity "$o/$v/$1_$2.log")"
  done
done
for cfg in "nasnet tf32" "randwire tf32" "nasnet fp32" "randwire fp32"; do
  set -- $cfg
  /usr/bin/time -f "%e s wall" timeout 110 build/bin/ios optimize --model $1 --randwire-graphs build/randwire_graphs \
    --opt ios-both --precision $2 --cost-model measured --quiet --kernel-cache "$cache" --out "$o/lead/$1_$2.json" \
    > "$o/lead/$1_$2.log" 2>&1
  echo "lead $1 $2: $(fidelity "$o/lead/$1_$2.log") $(tail -n 1 "$o/lead/$1_$2.log")"
done
for p in tf32 fp32; do
  timeout 150 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara \
    --exec staged,dataflow --cost-model measured --precision $p --rounds 3 --out-dir "$o/lead/policies_$p" \
    > "$o/lead/policies_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model|^Critical" "$o/lead/policies_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
