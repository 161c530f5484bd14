set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/policies; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 200 build/bin/ios_gpu_tests --gtest_filter="GpuKernelCache*:GpuOps*:GpuRuntime*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
for p in fp32 tf32; do
timeout 170 build/bin/exp_latency --model squeezenet,googlenet,inception_v3 --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow --cost-model measured --precision $p --rounds 5 --out-dir $o/$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|searched in" | grep -v "Sequential\|Greedy searched\|Opara searched" | cut -c1-150
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT policies
