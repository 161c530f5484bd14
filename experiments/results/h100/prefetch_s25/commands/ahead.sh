set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/ahead; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in fp32 tf32; do
IOS_KERNEL_CACHE=$o/kc.json timeout 270 build/bin/exp_latency --model inception_v3,googlenet,densenet121 --opt ios-both --exec staged,dataflow,staged+prefetch,staged+prefetch3,dataflow+prefetch,dataflow+prefetch2,dataflow+prefetch3,dataflow+prefetch5 --cost-model measured --precision $p --rounds 5 --out-dir $o/$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model|^Critical|searched" | cut -c1-160
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT ahead
