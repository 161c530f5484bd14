set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export RANDWIRE_GRAPHS=$PWD/build/randwire_graphs
o=$OUT/final; mkdir -p $o; cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
b=experiments/results/h100/search_s18
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuOps*:GpuKernelCache*:GpuRuntime*:*GpuMatchesReference*inception_v3_dp_parallel_merge*:*GpuMatchesReference*nasnet_dp_parallel_merge_staged*' 2>&1 | tee $o/gpu_tests.log | grep -E "PASSED|FAILED|tests ran" 
timeout 200 build/bin/ios optimize --model nasnet --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/nasnet_stages.json --out $o/nasnet.json 2>&1 | tee $o/nasnet_search.log | grep -E "Model:|Stage timing" | cut -c1-700
timeout 100 build/bin/ios optimize --model nasnet --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/nasnet_stages.json --no-measure --out $o/nasnet_cached.json 2>&1 | tee $o/nasnet_cached.log | grep -E "Model:" | cut -c1-300
for round in 1 2; do for s in $b/measured_floors/nasnet.json $b/host_build/nasnet.json $o/nasnet.json; do
  timeout 60 build/bin/ios run --model nasnet --schedule $s --iters 1000 2>&1 | tee -a $o/abab.log | grep -E "^Latency" | sed "s|^|nasnet $s round $round: |"
done; done
rm -f $o/nasnet_stages.json
tar czf $OUT/r.tar.gz -C $OUT final
