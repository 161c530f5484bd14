set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/search_ab; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
for r in 1 2 3; do for sp in 0 1; do
  timeout 60 build/bin/exp_latency --model inception_v3 --opt ios-both --exec staged+prefetch,dataflow+prefetch --search-prefetch-ahead $sp --cost-model measured --precision fp32 --rounds 5 --out-dir $o/inception_s${sp}_r$r > $o/inception_s${sp}_r$r.log 2>&1
  grep -E "^Model" $o/inception_s${sp}_r$r.log | sed -E "s/.*\[(.*)\].*cost: ([0-9.]+) sec.*Latency: (.*)/s$sp r$r \1 search \2 s \3/"
done; done
for net in nasnet randwire; do
  timeout 150 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$net.json > $o/${net}_search.log 2>&1
  grep -E "Optimization cost|Kernels|Fidelity" $o/${net}_search.log | cut -c1-200
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT search_ab
