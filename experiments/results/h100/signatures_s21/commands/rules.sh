set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/rules; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in randwire:w1 randwire:w0 randwire:w1max3 randwire:w0max3; do
  net=${job%%:*}; v=${job##*:}; n=${net}_$v
  case $v in w0) flags="--stage-timing 0/2/2-4/0.05";; w1) flags="";; w1max3) flags="--stage-timing 1/2/2-3/0.05";; w0max3) flags="--stage-timing 0/2/2-3/0.05";; esac
  timeout 200 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet $flags --out $o/$n.json --json $o/${n}_search.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-170)"
  grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-700
done
for r in 1 2; do for v in w1 w0 w1max3 w0max3; do
  timeout 60 build/bin/ios run --model randwire --randwire-graphs build/randwire_graphs --schedule $o/randwire_$v.json --iters 1000 > $o/run_${v}_$r.log 2>&1
  echo "run $r $v: $(grep -E '^Latency' $o/run_${v}_$r.log | cut -c1-90)"
done; done
tar czf $OUT/r.tar.gz -C $OUT rules
