set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/warmup; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 60 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.Measured*:GpuRuntime.ColdShare*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
for r in 1 2; do for w in 1 0; do
  timeout 110 build/bin/ios optimize --model randwire --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-timing $w/2/2-4/0.05 --out $o/randwire_w${w}_r$r.json > $o/randwire_w${w}_r$r.log 2>&1
  echo "w$w r$r: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/randwire_w${w}_r$r.log) | $(grep -oE "GPU: [0-9.]+ s in timed rounds, [0-9.]+ s busy" $o/randwire_w${w}_r$r.log) | $(grep -oE "Fidelity: .*" $o/randwire_w${w}_r$r.log | cut -c1-160)"
done; done
for r in 1 2; do for w in 1 0; do
  timeout 60 build/bin/ios run --model randwire --randwire-graphs build/randwire_graphs --schedule $o/randwire_w${w}_r$r.json --exec dataflow --iters 1000 > $o/run_w${w}_r$r.log 2>&1
  echo "run w$w r$r: $(grep -E '^Latency' $o/run_w${w}_r$r.log)"
done; done
timeout 80 build/bin/ios optimize --model nasnet --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-timing 0/2/2-4/0.05 --out $o/nasnet_w0.json > $o/nasnet_w0.log 2>&1
echo "nasnet w0: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/nasnet_w0.log) | $(grep -oE "Fidelity: .*" $o/nasnet_w0.log | cut -c1-160)"
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT warmup
