#!/usr/bin/env bash
# Dataflow execution's GPU runs (issue #14), each profile sized for one 10-minute device call. From the
# repository root on the GPU machine, binaries in build/bin:
#   run_dataflow.sh OUT smoke            `ios run --check` of Inception V3 IOS-Both in both modes
#   run_dataflow.sh OUT tests [NET [EXTRA]]  GPU tests of every mode: GpuMatchesReference for NET (default
#                                        all), then EXTRA (default: the dataflow chaos test, eager == graph;
#                                        '' for none)
#   run_dataflow.sh OUT latency P MODELS COST  exp_latency in every mode, every policy, precision P
#   run_dataflow.sh OUT traces           CUPTI timelines of GoogLeNet's and Inception V3's measured IOS-Both
#                                        schedules in every mode
set -uo pipefail
out=${1:-experiments/results/latest}
profile=${2:-smoke}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
[ -f kernel_cache.json ] && [ ! -f "$IOS_KERNEL_CACHE" ] && cp kernel_cache.json "$IOS_KERNEL_CACHE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
case "$profile" in
  smoke)
    for exec in staged dataflow; do
      timeout 120 build/bin/ios run --model inception_v3 --opt ios-both --cost-model analytic --exec "$exec" \
        --check --iters 500 2>&1 | tee -a "$out/smoke.log" | grep -E "Model:|Latency|Check|error"
      timeout 120 build/bin/ios run --model inception_v3 --opt ios-both --cost-model analytic --exec "$exec" \
        --chaos 50 2>&1 | tee -a "$out/smoke.log" | grep -E "Chaos|error"
    done ;;
  tests)
    filter=${3:-*} extra=${4:-:GpuChaos.Dataflow*:GpuRuntime.EagerStreams*}
    GTEST_FILTER="*GpuMatchesReference*/${filter}_*$extra" \
      timeout 580 build/bin/ios_gpu_tests 2>&1 | tee "$out/gpu_tests_${filter//\*/all}.log" |
      grep -E "^\[ *(FAILED|PASSED|SKIPPED) |tests ran|\[chaos\]"
    ;;
  latency)
    precision=${3:-fp32} models=${4:-inception_v3,googlenet,squeezenet} cost=${5:-measured}
    timeout 580 build/bin/exp_latency --model "$models" --exec staged,dataflow,dataflow-ordered --precision "$precision" \
      --cost-model "$cost" --out-dir "$out/${precision}_${models//,/_}" 2>&1 |
      tee -a "$out/exp_latency_${precision}_${models//,/_}.log" | grep -E "Model:|bound|error"
    ;;
  traces)  # the measured IOS-Both schedule, run and traced in every mode
    for m in googlenet inception_v3; do
      timeout 120 build/bin/ios optimize --model "$m" --opt ios-both --cost-model measured --quiet \
        --out "$out/${m}_ios_both.json" 2>&1 | tee -a "$out/traces.log" | grep -E "Model:|Latency|error"
      for exec in staged dataflow dataflow-ordered; do
        timeout 120 build/bin/ios run --model "$m" --schedule "$out/${m}_ios_both.json" --exec "$exec" \
          --trace "$out/${m}_ios_both_$exec.trace.json" 2>&1 | tee -a "$out/traces.log" | grep -E "Model:|Latency|Util|error"
      done
    done ;;
esac
