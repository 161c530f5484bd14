set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/googlenet_tf32; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
for rep in 1 2; do
timeout 150 build/bin/exp_latency --model googlenet --opt greedy,dp_parallel,dp_merge,ios-both --exec staged,dataflow,dataflow-free --cost-model measured --precision tf32 --rounds 5 --out-dir $o/policies_r$rep 2>&1 | tee $o/policies_r$rep.log | grep -E "^Model|searched" | sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-140
done
for p in greedy dp_parallel ios-both; do
  timeout 60 build/bin/ios optimize --model googlenet --opt $p --precision tf32 --cost-model measured --quiet --kernel-cache $o/kc.json --out $o/sched_$p.json > $o/optimize_$p.log 2>&1
  grep -E "Stages:|Fidelity" $o/optimize_$p.log | cut -c1-200
  for e in staged dataflow; do
    timeout 60 build/bin/ios run --model googlenet --schedule $o/sched_$p.json --precision tf32 --kernel-cache $o/kc.json --exec $e --iters 2000 --trace $o/trace_${p}_$e.json > $o/run_${p}_$e.log 2>&1
    echo "$p $e: $(grep -E '^Latency' $o/run_${p}_$e.log)"
  done
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT googlenet_tf32
