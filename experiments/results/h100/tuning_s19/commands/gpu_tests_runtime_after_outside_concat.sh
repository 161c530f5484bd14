set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c15; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime*' > $o/gpu_tests.log 2>&1; echo "gpu tests rc $?"
tail -n 3 $o/gpu_tests.log
tar czf $OUT/r.tar.gz -C $OUT c15
