set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/prefetch_small; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.Prefetching*:GpuRuntime.EagerStreams*:GpuRuntime.Measured*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
export IOS_KERNEL_CACHE=$o/kc_fp32.json
timeout 100 build/bin/ios run --model inception_v3 --schedule experiments/.sched/inception_v3.json --iters 1000 --exec auto --prefetch-weights auto --check > $o/run_auto.log 2>&1; grep -E "^Exec auto|^Check|^Latency|Mode:" $o/run_auto.log | cut -c1-220
for p in fp32 tf32; do
IOS_KERNEL_CACHE=$o/kc_$p.json timeout 200 build/bin/exp_latency --model squeezenet,googlenet,inception_v3 --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured --precision $p --rounds 5 --out-dir $o/$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical" | cut -c1-150
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT prefetch_small
