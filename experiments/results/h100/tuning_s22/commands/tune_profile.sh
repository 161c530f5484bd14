set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tune_profile; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in squeezenet:tf32 inception_v3:fp32 inception_v3:tf32; do
  net=${job%%:*}; p=${job#*:}; n=${net}_$p
  IOS_KERNEL_CACHE=$o/kc_$n.json timeout 100 build/bin/ios optimize --model $net --precision $p --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$n.json > $o/${n}_search.log 2> $o/${n}_profile.log
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Kernels:' $o/${n}_search.log)"
  grep "tune-profile" $o/${n}_profile.log | tail -1
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT tune_profile
