set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/policies; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in fp32 tf32; do
IOS_KERNEL_CACHE=$o/kc_$p.json timeout 285 build/bin/exp_latency --model squeezenet,googlenet,inception_v3 --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow --cost-model measured --precision $p --rounds 5 --out-dir $o/$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|IOS-Both searched in" | cut -c1-150
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT policies
