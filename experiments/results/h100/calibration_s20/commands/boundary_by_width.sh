set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/by_width; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 100 build/bin/ios_gpu_tests --gtest_filter='*StageBoundary*:*ColdShare*:*MeasuredCostModel*:*SiblingWorkers*' > $o/gpu_tests.log 2>&1; echo "tests rc=$?"
grep -E "^\[(l2|boundary|lane)\]|FAILED|PASSED" $o/gpu_tests.log | cut -c1-250
timeout 200 build/bin/exp_latency --model squeezenet,googlenet --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow --cost-model measured --precision fp32 --rounds 5 --out-dir $o/fp32 2>&1 | tee $o/exp_latency_fp32.log | grep -E "^Model|^Critical|every barrier" | cut -c1-200
tar czf $OUT/r.tar.gz -C $OUT by_width
