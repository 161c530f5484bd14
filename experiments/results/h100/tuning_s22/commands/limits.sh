set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/limits; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
search() {  # variant net tag
  local v=$1 net=$2 n=${2}_$1${3:-} flag=""; [ $v = full ] && flag=--full-timing
  IOS_KERNEL_CACHE=$o/kc_$n.json timeout 150 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet $flag --out $o/$n.json --json $o/${n}_search.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-170)"
  grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-700
}
search limited randwire _1; search full randwire _1
search limited nasnet; search full nasnet; search full inception_v3; search limited inception_v3
search full randwire _2; search limited randwire _2
for r in 1 2; do for s in randwire_limited_1 randwire_full_1 randwire_limited_2 randwire_full_2 nasnet_limited nasnet_full inception_v3_limited inception_v3_full; do
  net=${s%%_limited*}; net=${net%%_full*}
  IOS_KERNEL_CACHE=$o/kc_$s.json timeout 60 build/bin/ios run --model $net --randwire-graphs build/randwire_graphs --schedule $o/$s.json --iters 1000 > $o/run_${s}_$r.log 2>&1
  echo "run $s round $r: $(grep -E '^Latency' $o/run_${s}_$r.log | head -1 | cut -c1-120)"
done; done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT limits
