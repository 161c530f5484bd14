set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/lanes_tests; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 560 build/bin/ios_gpu_tests --gtest_filter="GpuChaos.DataflowGraphs*:GpuChaos.AMissing*:GpuProfiler*:GpuRuntime.NoGpu*:*GpuMatchesReference*dataflow*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure|tests ran" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
xz -9 $o/gpu_tests.log
tar czf $OUT/r.tar.gz -C $OUT lanes_tests
