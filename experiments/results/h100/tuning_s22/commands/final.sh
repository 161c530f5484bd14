set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for job in randwire:fp32 nasnet:fp32 nasnet:tf32; do
  net=${job%%:*}; p=${job#*:}; n=${net}_$p
  IOS_KERNEL_CACHE=$o/kc_$n.json timeout 170 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --precision $p --opt ios-both --cost-model measured --max-part-size 50 --quiet --out $o/$n.json > $o/${n}_search.log 2>&1
  echo "$n: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${n}_search.log) | $(grep -E '^Fidelity:' $o/${n}_search.log | cut -c1-150)"
  grep -E "^Kernels:" $o/${n}_search.log; grep -o "[0-9]* stages timed.*" $o/${n}_search.log | cut -c1-700
done
rm -f $o/kc_*.json
tar czf $OUT/r.tar.gz -C $OUT final
