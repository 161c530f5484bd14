set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/fidelity; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in squeezenet:greedy squeezenet:ios-both googlenet:ios-both inception_v3:ios-both densenet121:ios-both nasnet:ios-both randwire:ios-both; do
  net=${job%%:*}; opt=${job##*:}; n=${net}_$opt
  timeout 240 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt $opt --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${n}_stages.json --out $o/$n.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -E "^Fidelity:" $o/${n}_search.log | cut -c1-170) | $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log)"
  grep -o "figures less the stage.*end to end" $o/${n}_search.log
  if [ $net = squeezenet ]; then timeout 60 build/bin/ios run --model $net --schedule $o/$n.json --iters 1000 --trace $o/${n}_trace.json > $o/${n}_run.log 2>&1; grep -E "^Latency" $o/${n}_run.log | cut -c1-80; fi
done
tar czf $OUT/r.tar.gz -C $OUT fidelity
