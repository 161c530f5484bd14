set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export RANDWIRE_GRAPHS=$PWD/build/randwire_graphs
o=$OUT/policies; mkdir -p $o; cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
b=experiments/results/h100/search_s18
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 330 build/bin/exp_latency --model squeezenet,googlenet,inception_v3 --opt sequential,greedy,dp_parallel_merge,opara --exec staged,dataflow --cost-model measured --precision fp32 --rounds 5 2>&1 | tee $o/exp_latency_fp32.log | grep -vE "^\[|ETA" | tail -30
for round in 1 2; do for kc in none file; do
  f=$IOS_KERNEL_CACHE; [ $kc = none ] && f=none
  timeout 100 build/bin/ios run --model nasnet --schedule $b/host_build/nasnet.json --kernel-cache $f --iters 1000 2>&1 | tee -a $o/kernel_cache_ab.log | grep -E "^Latency" | sed "s|^|nasnet host_build kernel-cache $kc round $round: |"
done; done
tar czf $OUT/r.tar.gz -C $OUT policies
