set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final_budget; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*:TuningBudget*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
rm -f $o/kc.json
timeout 60 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured --quiet --kernel-cache $o/kc.json > $o/inception_tf32.log 2>&1
echo "inception tf32 first process: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/inception_tf32.log) | $(grep -oE "Kernels: .*" $o/inception_tf32.log)"
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT final_budget
