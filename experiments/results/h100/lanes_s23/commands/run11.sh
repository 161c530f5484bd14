set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/lead; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in inception_v3:tf32 squeezenet:tf32 googlenet:tf32 inception_v3:fp32; do
  net=${job%%:*}; p=${job#*:}; export IOS_KERNEL_CACHE=$o/kc_$p.json
  for v in default lead; do
    n=${net}_${p}_$v; flag=""; [ $v = lead ] && flag="--stage-timing adaptive,lead"
    timeout 100 build/bin/ios optimize --model $net --precision $p --opt ios-both --cost-model measured --max-part-size 50 $flag --out $o/$n.json > $o/${n}_search.log 2>&1
    echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-200) | $(grep -oE 'figures less the [a-z ]*, [0-9.]+ us' $o/${n}_search.log)"
  done
  for round in 1 2; do for v in default lead; do
    n=${net}_${p}_$v
    timeout 60 build/bin/ios run --model $net --precision $p --schedule $o/$n.json --iters 1000 > $o/${n}_run$round.log 2>&1
    echo "  $n fresh ios run $round: $(grep -E '^Latency' $o/${n}_run$round.log | cut -c1-60)"
  done; done
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT lead
