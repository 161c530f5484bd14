set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/cut3; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
search() {  # variant net tag
  local v=$1 net=$2 n=${2}_$1${3:-} bin=build/bin/ios; [ $v = base ] && bin=build/bin/ios_base
  IOS_KERNEL_CACHE=$o/kc_$n.json timeout 200 $bin optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$n.json --json $o/${n}_search.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-170)"
  grep -E "^Kernels:" $o/${n}_search.log; grep -o "host: .*" $o/${n}_search.log
}
search new inception_v3 _a; search base inception_v3 _a
search new nasnet; search base nasnet; search base randwire; search new randwire
for net in nasnet randwire; do for r in 1 2; do for v in base new; do
  IOS_KERNEL_CACHE=$o/kc_${net}_$v.json timeout 60 build/bin/ios run --model $net --randwire-graphs build/randwire_graphs --schedule $o/${net}_new.json --iters 1000 > $o/run_${net}_kc${v}_$r.log 2>&1
  echo "run $net kernels=$v round $r: $(grep -E '^Latency' $o/run_${net}_kc${v}_$r.log | head -1 | cut -c1-120)"
done; done; done
timeout 200 build/bin/ios_gpu_tests --gtest_filter="GpuKernelCache*:GpuOps*:GpuRuntime*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT cut3
