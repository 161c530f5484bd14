set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
# ./run.sh's main job on the GPU (the script itself builds first; here the carried binaries)
timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --quiet --out $o/inception_v3.ios-both.json > $o/main_optimize.log 2>&1; grep -E "Optimization cost|^Fidelity" $o/main_optimize.log | cut -c1-200
timeout 120 build/bin/ios run --model inception_v3 --schedule $o/inception_v3.ios-both.json --exec auto --prefetch-weights auto --check > $o/main_run.log 2>&1; grep -E "^Exec auto|^Latency|^Check" $o/main_run.log | cut -c1-220
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT final
