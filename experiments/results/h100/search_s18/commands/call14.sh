set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/sq; mkdir -p $o; cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
for round in 1 2; do
timeout 60 build/bin/ios run --model squeezenet --opt greedy --iters 2000 2>&1 | grep -E "^Latency" | sed "s|^|greedy round $round: |"
timeout 60 build/bin/ios run --model squeezenet --opt opara --iters 2000 2>&1 | grep -E "^Latency" | sed "s|^|opara round $round: |"
for c in 0 1 2 3 4; do
timeout 60 build/bin/ios run --model squeezenet --schedule sq_diag/sq_c$c.json --iters 2000 2>&1 | grep -E "^Latency" | sed "s|^|ios-both less $c us per stage round $round: |"
done; done 2>&1 | tee $o/ab.log
