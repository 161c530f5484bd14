set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/lanes; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for round in 1 2; do
for v in staged:own dataflow:every dataflow-ordered:every dataflow:own; do
  m=${v%%:*}; s=${v#*:}; n=${m}_$s
  timeout 60 build/bin/ios run --model inception_v3 --schedule experiments/.sched/$s.json --exec $m --iters 1000 --graph-dot $o/$n.dot > $o/${n}_run$round.log 2>&1
  echo "$n round $round: $(grep -E '^Latency' $o/${n}_run$round.log | cut -c1-90) $(grep -o 'Mode: .*' $o/${n}_run$round.log)"
done; done
timeout 120 build/bin/exp_instances --model inception_v3 --schedule experiments/.sched/own.json --copies 2 --cost-model measured --out-dir $o/instances 2>&1 | tee $o/instances.log | grep copy
timeout 300 build/bin/ios_gpu_tests --gtest_filter="GpuKernelCache*:GpuOps*:GpuRuntime*:GpuChaos*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure|tests ran" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT lanes
