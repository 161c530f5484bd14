set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/oneround2; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.Measured*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|OK \]|limits\]"
src="--randwire-graphs build/randwire_graphs"
for n in randwire_m0 randwire_m0.1 randwire_m0.1b nasnet_m0 nasnet_m0.1; do
  net=${n%%_*}; m=${n#*_m}; m=${m%b}
  timeout 170 build/bin/ios optimize --model $net $src --opt ios-both --cost-model measured --max-part-size 50 --quiet --one-round-margin $m --out $o/$n.json --json $o/${n}_search.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-160)"
  grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-600
  grep -E "^Kernels" $o/${n}_search.log | cut -c1-200
done
for r in 1 2; do for n in randwire_m0 randwire_m0.1 randwire_m0.1b nasnet_m0 nasnet_m0.1; do
  net=${n%%_*}
  timeout 60 build/bin/ios run --model $net $src --schedule $o/$n.json --iters 1000 > $o/run_${n}_$r.log 2>&1
  echo "$n round $r: $(grep -E '^Latency' $o/run_${n}_$r.log | cut -c1-90)"
done; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT oneround2
