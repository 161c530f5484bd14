set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/warmup; mkdir -p $o
cp kernel_cache.json $o/kc.json
s=experiments/results/h100/search_s18/host_build/nasnet.json
for round in 1 2; do
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json --warmUp 5000 2>&1 | grep -E "^Latency" | sed "s|^|file, 5 s warm-up round $round: |"
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json 2>&1 | grep -E "^Latency" | sed "s|^|file round $round: |"
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache none 2>&1 | grep -E "^Latency" | sed "s|^|tuned round $round: |"
done 2>&1 | tee $o/ab.log
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee -a $o/ab.log
