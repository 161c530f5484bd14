set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tests_rest; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --schedule experiments/.sched/inc_tf32.json --iters 1000 > $o/fresh_a.log 2>&1; echo "schedule file, fresh process: $(grep -E '^Latency' $o/fresh_a.log | cut -c1-90)"
timeout 100 build/bin/ios run --model inception_v3 --precision tf32 --opt ios-both --cost-model measured --max-part-size 50 --iters 1000 > $o/search_and_run.log 2>&1; echo "search and run in one process: $(grep -E '^Latency' $o/search_and_run.log | cut -c1-90)"
timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --schedule experiments/.sched/inc_tf32.json --iters 1000 > $o/fresh_b.log 2>&1; echo "schedule file, fresh process: $(grep -E '^Latency' $o/fresh_b.log | cut -c1-90)"
rm -f $o/kc.json
timeout 480 build/bin/ios_gpu_tests --gtest_filter="*nasnet_*_dataflow:*densenet121_*_dataflow:*_dataflow_barriers:*randwire_opara_dataflow:*randwire_dp_parallel_merge_dataflow" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure|tests ran" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
xz -9 $o/gpu_tests.log
tar czf $OUT/r.tar.gz -C $OUT tests_rest
