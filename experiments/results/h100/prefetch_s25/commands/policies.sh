set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/policies; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
modes=staged,dataflow,staged+prefetch,dataflow+prefetch
show() { grep -E "^Model.*(IOS-Both|Greedy|Opara)|searched" $1 | sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120; }
timeout 150 build/bin/exp_latency --model inception_v3,googlenet,squeezenet,densenet121 --opt sequential,greedy,ios-both,opara --exec $modes --cost-model measured --precision fp32 --rounds 3 --out-dir $o/fp32 > $o/fp32.log 2>&1; show $o/fp32.log
timeout 150 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara --exec $modes --cost-model measured --precision tf32 --rounds 3 --out-dir $o/tf32 > $o/tf32.log 2>&1; show $o/tf32.log
timeout 270 build/bin/exp_latency --model nasnet,randwire --randwire-graphs build/randwire_graphs --opt greedy,ios-both,opara --exec $modes --cost-model measured --precision fp32 --rounds 3 --out-dir $o/fp32_big > $o/fp32_big.log 2>&1; show $o/fp32_big.log
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT policies
