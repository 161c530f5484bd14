set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/fidelity; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in tf32 fp32; do
  export IOS_KERNEL_CACHE=$o/kc_$p.json; n=inception_v3_$p
  timeout 100 build/bin/ios optimize --model inception_v3 --precision $p --opt ios-both --cost-model measured --max-part-size 50 --stage-cache $o/${n}_stages.json --out $o/$n.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-200)"
  timeout 60 build/bin/ios run --model inception_v3 --precision $p --schedule $o/$n.json --iters 1000 > $o/${n}_run.log 2>&1; grep -E "^Latency" $o/${n}_run.log | cut -c1-90
  timeout 60 build/bin/ios run --model inception_v3 --precision $p --schedule $o/$n.json --iters 200 --trace $o/${n}_trace.json > $o/${n}_trace_run.log 2>&1; grep -E "^Latency" $o/${n}_trace_run.log | cut -c1-90
done
export IOS_KERNEL_CACHE=$o/kc_fp32.json
for i in 1 2 3; do
  timeout 60 build/bin/ios optimize --model squeezenet --opt ios-both --cost-model measured --max-part-size 50 --out $o/squeezenet_$i.json > $o/squeezenet_${i}_search.log 2>&1
  echo "squeezenet $i: $(grep -o 'Optimization cost: [0-9.]* sec' $o/squeezenet_${i}_search.log) | $(grep -E '^Fidelity:' $o/squeezenet_${i}_search.log | cut -c1-200)"
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT fidelity
