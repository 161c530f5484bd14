set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/sigv3; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in squeezenet:w0 googlenet:w0 inception_v3:w0 densenet121:w0 nasnet:w0 randwire:w0 randwire:w1 randwire:w0_noahead; do
  net=${job%%:*}; v=${job##*:}; n=${net}_$v
  case $v in w0) flags="--stage-timing 0/2/2-4/0.05";; w1) flags="";; w0_noahead) flags="--stage-timing 0/2/2-4/0.05 --no-build-ahead";; esac
  timeout 200 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet $flags --out $o/$n.json --json $o/${n}_search.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-170)"
  grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-700
done
tar czf $OUT/r.tar.gz -C $OUT sigv3
