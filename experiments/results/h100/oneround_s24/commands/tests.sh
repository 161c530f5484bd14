set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tests; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED" | head
for i in 1 2 3; do
  timeout 60 build/bin/ios optimize --model squeezenet --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/squeezenet_$i.json > $o/squeezenet_${i}_search.log 2>&1
  echo "squeezenet $i: $(grep -o 'Optimization cost: [0-9.]* sec' $o/squeezenet_${i}_search.log) | $(grep -E '^Fidelity:' $o/squeezenet_${i}_search.log | cut -c1-200)"
done
timeout 60 build/bin/ios optimize --model squeezenet --opt greedy --cost-model measured --quiet --out $o/squeezenet_greedy.json > $o/squeezenet_greedy_search.log 2>&1
for r in 1 2; do for n in squeezenet_1 squeezenet_2 squeezenet_3 squeezenet_greedy; do
  timeout 60 build/bin/ios run --model squeezenet --schedule $o/$n.json --iters 1000 > $o/run_${n}_$r.log 2>&1
  echo "$n round $r: $(grep -E '^Latency' $o/run_${n}_$r.log | cut -c1-90)"
done; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT tests
