set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/lazy_build; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
search() {  # variant net precision
  local v=$1 net=$2 p=$3 n=${2}_$3_$1 bin=build/bin/ios; [ $v = prev ] && bin=build/bin/ios_prev
  IOS_KERNEL_CACHE=$o/kc_$n.json timeout 100 $bin optimize --model $net --precision $p --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$n.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Kernels:' $o/${n}_search.log)"
}
search new squeezenet tf32; search prev squeezenet tf32
search prev inception_v3 fp32; search new inception_v3 fp32
search new inception_v3 tf32; search prev inception_v3 tf32
search prev googlenet fp16; search new googlenet fp16
for r in 1 2; do for v in prev new; do
  for job in squeezenet:tf32 inception_v3:fp32 inception_v3:tf32 googlenet:fp16; do
    net=${job%%:*}; p=${job#*:}
    IOS_KERNEL_CACHE=$o/kc_${net}_${p}_$v.json timeout 60 build/bin/ios run --model $net --precision $p --schedule $o/${net}_${p}_new.json --iters 1000 > $o/run_${net}_${p}_kc${v}_$r.log 2>&1
    echo "run $net $p kernels=$v round $r: $(grep -E '^Latency' $o/run_${net}_${p}_kc${v}_$r.log | head -1 | cut -c1-100)"
  done
done; done
timeout 200 build/bin/ios_gpu_tests --gtest_filter="GpuKernelCache*:GpuOps*:GpuRuntime*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT lazy_build
