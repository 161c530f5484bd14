#!/usr/bin/env bash
# GPU reliability checks beyond the test suite, each sized for a 10-minute run. From the repository root on
# the GPU machine, binaries in build/bin:
#   gpu_reliability.sh OUT_DIR chaos "MODELS" [N]  `ios run --chaos N` (default 100) for every model x
#                          policy x precision: N replays with random delays before every plan step, each
#                          output compared bit for bit with the unperturbed one; plus --check against the
#                          CPU reference. One line per case in chaos.log, a summary in chaos_summary.txt.
#   gpu_reliability.sh OUT_DIR sanitizer  compute-sanitizer memcheck, racecheck, synccheck and initcheck on
#                          `ios run` (SqueezeNet: IOS-Both at fp32, Opara at fp16), kernels from the cache
#   gpu_reliability.sh OUT_DIR sanitizer_tests  memcheck and synccheck on the GPU tests that need no network
#                          (not GpuChaos: the sanitizers serialise kernels, so its negative control cannot race)
set -uo pipefail
out=${1:-/tmp/ios_reliability}
profile=${2:-chaos}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
case "$profile" in
  chaos)
    models=${3:-squeezenet}
    replays=${4:-100}
    for m in $models; do
      for opt in sequential greedy dp_merge dp_parallel ios-both opara; do
        for p in fp32 tf32 fp16 bf16; do
          line=$(timeout 150 build/bin/ios run --model "$m" --opt "$opt" --cost-model analytic --precision "$p" \
            --max-part-size 50 --chaos "$replays" --check 2>&1 |
            tee -a "$out/chaos_full.log" | grep -E "^Chaos|^Check|error" | tr '\n' ' ')
          rc=${PIPESTATUS[0]}
          echo "$m $opt $p rc=$rc $line" | tee -a "$out/chaos.log"
        done
      done
    done
    grep -c "PASS" "$out/chaos.log" | xargs -I{} echo "chaos cases passing both checks' lines: {}" >"$out/chaos_summary.txt"
    grep -v "rc=0" "$out/chaos.log" >>"$out/chaos_summary.txt" || true
    cat "$out/chaos_summary.txt" ;;
  sanitizer)
    cs=compute-sanitizer
    command -v $cs >/dev/null || cs=/usr/local/cuda/bin/compute-sanitizer
    for tool in memcheck synccheck initcheck racecheck; do
      for case in ios-both:fp32 opara:fp16; do
        opt=${case%%:*} p=${case##*:}
        timeout 100 $cs --tool "$tool" --error-exitcode 9 build/bin/ios run --model squeezenet --opt "$opt" \
          --cost-model analytic --precision "$p" --warmup 1 --iters 2 2>&1 |
          tail -3 | sed "s/^/$tool squeezenet $opt $p: /" | tee -a "$out/sanitizer.log"
        echo "$tool squeezenet $opt $p rc=${PIPESTATUS[0]}" | tee -a "$out/sanitizer.log"
      done
    done ;;
  sanitizer_tests)
    for tool in memcheck synccheck; do
      timeout 280 compute-sanitizer --tool "$tool" --error-exitcode 9 build/bin/ios_gpu_tests \
        --gtest_filter='*GpuOps*:GpuRuntime*' 2>&1 | tee "$out/sanitizer_tests_$tool.log" |
        grep -E "ERROR SUMMARY|^\[ *(FAILED|PASSED)"
      echo "$tool rc=${PIPESTATUS[0]}"
    done ;;
esac
