#!/usr/bin/env bash
# The kernel layer's GPU runs, each profile sized for one 10-minute device call. From the repository
# root on the GPU machine, binaries in build/bin:
#   run_kernel_layer.sh OUT_DIR engines   op matrix, kernel cache across processes, `ios run` of both
#                                         networks' sequential schedule in every precision and engine
#   run_kernel_layer.sh OUT_DIR tests [- NAME]  the GPU test suite (networks x policies x precisions); with
#                                         GTEST_FILTER set, that part of it, logged as gpu_tests_NAME.log
#   run_kernel_layer.sh OUT_DIR latency P exp_latency (measured searches) at precision P
#   run_kernel_layer.sh OUT_DIR repeat P  the same exp_latency run in three processes (reproducibility)
#   run_kernel_layer.sh OUT_DIR pytorch   compare_pytorch.py: eager, CUDA graph, torch.compile
#   run_kernel_layer.sh OUT_DIR census    kernel census (CUPTI traces of IOS-Both; torch.profiler of
#                                         PyTorch's CUDA graph), fused-sum A/B, three-process repeat
#   run_kernel_layer.sh OUT_DIR autotune  compare_pytorch.py: torch.compile(max-autotune), tf32 + fp16
set -uo pipefail
out=${1:-experiments/results/latest}
profile=${2:-engines}
precision=${3:-fp32}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
latency() {  # $1: output folder
  timeout 280 build/bin/exp_latency --model googlenet,inception_v3 --opt sequential,greedy,ios-both,opara \
    --precision "$precision" --cost-model measured --out-dir "$1" 2>&1 | tee -a "$1/exp_latency.log" |
    grep -E "Model:|bound|error"
}
case "$profile" in
  engines)
    timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuKernelCache*:GpuRuntime*' 2>&1 |
      tee "$out/gpu_tests_ops.log" | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |\[ops\]"
    for model in googlenet inception_v3; do
      for p in fp32 tf32 fp16 bf16; do
        for engine in graph legacy; do
          timeout 120 build/bin/ios run --model "$model" --opt sequential --cost-model analytic --precision "$p" \
            --conv-engine "$engine" --layout nchw --check --verbose --iters 200 2>&1 | tee -a "$out/ios_run.log" |
            grep -E "Model:|Latency|Check|Convolutions|error"
        done
      done
    done ;;
  tests)
    timeout 580 build/bin/ios_gpu_tests 2>&1 | tee "$out/gpu_tests${GTEST_FILTER:+_$4}.log" | grep -E "^\[ *(FAILED|PASSED|SKIPPED) |tests ran" ;;
  latency) mkdir -p "$out/$precision" && latency "$out/$precision" ;;
  repeat)  # one schedule (analytic IOS-Both: deterministic) in three processes, kernel cache shared
    for m in inception_v3 googlenet; do
      for i in 1 2 3; do
        timeout 100 build/bin/ios run --model "$m" --opt ios-both --cost-model analytic --precision "$precision" \
          --iters 500 2>&1 | tee -a "$out/repeat_$precision.log" | grep -E "Model:|Latency|error"
      done
    done ;;
  pytorch)
    timeout 560 /opt/torch/.venv/bin/python experiments/compare_pytorch.py --modes graph,compile \
      --precisions fp32,tf32,fp16,bf16 --out-dir "$out" 2>&1 | tee "$out/pytorch.log" | grep -E "Model:|Latency|Error" ;;
  census)
    for m in googlenet inception_v3; do
      for p in fp32 tf32 fp16; do
        timeout 60 build/bin/ios run --model "$m" --opt ios-both --cost-model analytic --precision "$p" \
          --trace "$out/trace_${m}_${p}.json" 2>&1 | tee -a "$out/census_ios_run.log" | grep -E "Model:|Latency|error"
      done
    done
    timeout 240 /opt/torch/.venv/bin/python experiments/compare_pytorch.py --modes graph --precisions fp32,tf32,fp16 \
      --blocks 3 --census "$out/census_pytorch.json" --out-dir "$out/census_pytorch" 2>&1 | tee "$out/census_pytorch.log" |
      grep -E "Model:|Latency|Error"
    python3 experiments/kernel_census.py --pytorch "$out/census_pytorch.json" --ours \
      $(for m in googlenet inception_v3; do for p in fp32 tf32 fp16; do echo "${m}_${p}_IOS-Both=$out/trace_${m}_${p}.json"; done; done) \
      > "$out/census.md" 2>&1
    # Fused sums A/B: the same schedule with and without sums fused into convolutions, alternating.
    for m in squeezenet nasnet; do
      for o in sequential ios-both; do
        for i in 1 2; do
          for flag in "" --no-fused-sums; do
            timeout 100 build/bin/ios run --model "$m" --opt "$o" --cost-model analytic --precision fp16 --check \
              --iters 300 $flag 2>&1 | sed "s/^/[$m $o ${flag:-fused}] /" | tee -a "$out/fused_sums.log" |
              grep -E "Model:|Latency|Check|sums fused|error"
          done
        done
      done
    done
    for i in 1 2 3; do
      timeout 100 build/bin/ios run --model googlenet --opt ios-both --cost-model analytic --precision fp16 \
        --iters 1000 2>&1 | tee -a "$out/repeat_googlenet_fp16.log" | grep -E "Model:|Latency|error"
    done ;;
  autotune)
    timeout 590 /opt/torch/.venv/bin/python experiments/compare_pytorch.py --modes max-autotune \
      --precisions tf32,fp16 --blocks 3 --out-dir "$out/max_autotune" 2>&1 | tee "$out/max_autotune.log" |
      grep -E "Model:|Latency|Error" ;;
  *) echo "unknown profile $profile" >&2; exit 2 ;;
esac
