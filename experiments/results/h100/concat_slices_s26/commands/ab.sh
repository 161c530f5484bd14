# Session 26: stages timed with their outputs where the network writes them (a later stage's
# concatenation) against main before the change (build/base), alternating; then the GPU tests and one
# CUPTI timeline of each staged tf32 schedule (for experiments/stage_windows.py with exp_replay).
set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/ab; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
search() { # BIN LABEL MODEL PRECISION
  timeout 50 build/$1/ios optimize --model $3 --opt ios-both --precision $4 --cost-model measured --quiet \
    --stage-cache $o/$2_stages.json --out $o/$2.json > $o/$2.log 2>&1
  echo "$2: $(grep -oE 'Optimization cost: [0-9.]+ sec' $o/$2.log) | $(grep -E '^Fidelity' $o/$2.log | cut -c1-190 | tr '\n' ' ')"
}
for cfg in "inception_v3 tf32 1" "inception_v3 tf32 2"; do set -- $cfg
  search base base_$1_$2_$3 $1 $2; search bin new_$1_$2_$3 $1 $2
done
timeout 100 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
for cfg in "inception_v3 fp16 1" "googlenet tf32 1" "inception_v3 fp32 1"; do set -- $cfg
  search base base_$1_$2_$3 $1 $2; search bin new_$1_$2_$3 $1 $2
done
for v in base:base bin:new; do b=${v%%:*}; l=${v##*:}
  timeout 40 build/$b/ios run --model inception_v3 --schedule $o/${l}_inception_v3_tf32_1.json --precision tf32 --exec staged \
    --iters 300 --trace $o/${l}_trace.json > $o/${l}_trace_run.log 2>&1; echo "$l trace: $(grep -E '^Latency' $o/${l}_trace_run.log)"
done
rm -f $o/kc.json
tar cJf $OUT/ab.tar.xz -C $OUT ab
