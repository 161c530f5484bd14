set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/host_build; mkdir -p $o; cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
b=experiments/results/h100/search_s18/measured_floors
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
which perf; lscpu | grep -E "Model name|MHz|^CPU\(s\)" | tee $o/cpu.txt
build/bin/mplan_diag nasnet $b/nasnet.json | tee -a $o/cpu.txt
for net in nasnet randwire; do
  timeout 250 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$net.json 2>&1 | tee $o/${net}_search.log | grep -E "Model:|Stage timing" | cut -c1-700
done
for net in nasnet randwire; do for round in 1 2; do for s in $b/$net.json $o/$net.json; do
  timeout 60 build/bin/ios run --model $net --randwire-graphs build/randwire_graphs --schedule $s --iters 1000 2>&1 | tee -a $o/abab.log | grep -E "^Latency" | sed "s|^|$net $s round $round: |"
done; done; done
tar czf $OUT/r.tar.gz -C $OUT host_build
