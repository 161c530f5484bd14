set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/address; mkdir -p $o
cp kernel_cache.json $o/kc.json
s=experiments/results/h100/search_s18/host_build/nasnet.json
for round in 1 2; do for pad in 0 1 2 7 64 300; do
IOS_DEBUG_PAD_MB=$pad timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json 2>&1 | grep -E "^Latency" | sed "s|^|file pad $pad MiB round $round: |"
done; done 2>&1 | tee $o/ab.log
