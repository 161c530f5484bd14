set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tuning_rule; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
# first processes: each with an empty kernel cache, so its search tunes every engine
for rep in 1 2; do for p in tf32 fp16; do for m in inception_v3 googlenet; do
  rm -f $o/kc.json
  timeout 120 build/bin/ios optimize --model $m --opt ios-both --precision $p --cost-model measured --quiet --kernel-cache $o/kc.json --prefetch-weights auto > $o/${m}_${p}_r$rep.log 2>&1
  echo "$m $p r$rep: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/${m}_${p}_r$rep.log) | $(grep -oE "Kernels: .*" $o/${m}_${p}_r$rep.log) | $(grep -oE "measured / predicted [0-9.]+" $o/${m}_${p}_r$rep.log | tr '\n' ' ')"
done; done; done
rm -f $o/kc.json
timeout 300 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran"
IOS_KERNEL_CACHE=$o/kc.json timeout 200 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt sequential,greedy,ios-both,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured --precision tf32 --rounds 3 --out-dir $o/policies_tf32 2>&1 | tee $o/policies_tf32.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|searched" | sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-140
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT tuning_rule
