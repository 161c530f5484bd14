set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/bisect2; mkdir -p $o
cp kernel_cache.json $o/kc.json
s=experiments/results/h100/search_s18/host_build/nasnet.json
for round in 1 2; do for n in 1 3 10; do
IOS_TUNE_AFTER=$n timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json 2>&1 | grep -E "^Latency" | sed "s|^|file, first $n convs tuned after and discarded, round $round: |"
done; done 2>&1 | tee $o/ab.log
