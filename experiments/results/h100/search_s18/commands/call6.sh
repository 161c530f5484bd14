set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/kc_diag; mkdir -p $o
cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
s=experiments/results/h100/search_s18/host_build/nasnet.json
for round in 1 2; do for runs in 1 20 200; do
  IOS_FILE_RUNS=$runs timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 2>&1 | tee -a $o/runs.log | grep -E "^Latency" | sed "s|^|file runs $runs round $round: |"
done; done
CUDA_MODULE_LOADING=EAGER timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 2>&1 | grep -E "^Latency" | sed "s|^|eager: |"
tar czf $OUT/r.tar.gz -C $OUT kc_diag
