set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/prefetch_big; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
IOS_KERNEL_CACHE=$o/kc.json timeout 560 build/bin/exp_latency --model densenet121,nasnet,randwire --randwire-graphs build/randwire_graphs --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured --precision fp32 --rounds 3 --out-dir $o/fp32_big 2>&1 | tee $o/exp_latency_fp32_big.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|IOS-Both searched" | cut -c1-150
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT prefetch_big
