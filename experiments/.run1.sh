set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/grouped; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in fp32 tf32; do
  export IOS_KERNEL_CACHE=$o/kc_$p.json
  timeout 100 build/bin/ios optimize --model inception_v3 --precision $p --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/inception_v3_$p.json > $o/search_$p.log 2>&1
  echo "$p: $(grep -o 'Optimization cost: [0-9.]* sec' $o/search_$p.log) | $(grep -E '^Fidelity' $o/search_$p.log | cut -c1-200)"
  timeout 120 build/bin/exp_instances --model inception_v3 --schedule $o/inception_v3_$p.json --copies 2 --precision $p --cost-model measured --out-dir $o/instances_$p 2>&1 | tee $o/instances_$p.log | grep copy
done
for p in fp32 tf32; do
  export IOS_KERNEL_CACHE=$o/kc_$p.json
  timeout 200 build/bin/exp_latency --model inception_v3,googlenet --opt greedy,dp_parallel_merge --exec staged,dataflow,dataflow-grouped --cost-model measured --precision $p --rounds 5 --out-dir $o/latency_$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model|^Critical" | cut -c1-160
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT grouped
