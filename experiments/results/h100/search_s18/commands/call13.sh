set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tune_once; mkdir -p $o
cp kernel_cache.json $o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuRuntime.MeasuredCostModel*' 2>&1 | tee $o/gpu_tests.log | grep -E "PASSED|FAILED|tests ran"
s=experiments/results/h100/search_s18/host_build/nasnet.json
i=experiments/results/h100/refine_s17/inception_v3_dp.json
for round in 1 2; do
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json 2>&1 | grep -E "^Latency" | sed "s|^|nasnet file (one tuning per context) round $round: |"
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache none 2>&1 | grep -E "^Latency" | sed "s|^|nasnet tuned round $round: |"
for e in staged dataflow; do
timeout 100 build/bin/ios run --model inception_v3 --schedule $i --exec $e --iters 1000 --kernel-cache $o/kc.json 2>&1 | grep -E "^Latency" | sed "s|^|inception_v3 $e round $round: |"
done; done 2>&1 | tee $o/ab.log
tar czf $OUT/r.tar.gz -C $OUT tune_once
