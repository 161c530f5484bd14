set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/fidelity_tf32; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
for net in inception_v3 googlenet squeezenet; do
  timeout 100 build/bin/ios optimize --model $net --precision tf32 --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$net.json > $o/${net}_search.log 2>&1
  echo "$net: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_search.log) | $(grep -E '^Fidelity:' $o/${net}_search.log | cut -c1-200)"
  timeout 60 build/bin/ios run --model $net --precision tf32 --schedule $o/$net.json --iters 1000 > $o/${net}_run.log 2>&1
  echo "$net fresh run: $(grep -E '^Latency' $o/${net}_run.log | cut -c1-60)"
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT fidelity_tf32
