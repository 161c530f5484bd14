set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
# run.sh's main job, on an empty kernel cache
timeout 100 build/bin/ios optimize --model inception_v3 --opt ios-both --prefetch-weights auto --quiet --out $o/inception_v3.ios-both.json > $o/main_optimize.log 2>&1
grep -E "Optimization cost|Stage timing|Kernels|Fidelity" $o/main_optimize.log | cut -c1-700
timeout 100 build/bin/ios run --model inception_v3 --schedule $o/inception_v3.ios-both.json --exec auto --prefetch-weights auto --check > $o/main_run.log 2>&1
grep -E "Exec auto|^Model|^Latency|Check" $o/main_run.log | cut -c1-300
timeout 330 build/bin/exp_latency --model inception_v3,googlenet,squeezenet,densenet121 --opt sequential,greedy,ios-both,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured --precision fp32 --rounds 3 --out-dir $o/policies_fp32 2>&1 | tee $o/policies_fp32.log | grep -E "^Model.*(IOS-Both|Greedy|Opara)|^Critical|IOS-Both searched" | sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-140
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT final
