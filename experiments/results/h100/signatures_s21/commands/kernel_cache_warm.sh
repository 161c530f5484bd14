set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/kernel_cache_warm; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in inception_v3:fresh inception_v3:cached randwire:fresh randwire:cached; do
  net=${job%%:*}; k=${job##*:}; n=${net}_kernels_$k
  timeout 200 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$n.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-170)"
  grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-600
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT kernel_cache_warm
