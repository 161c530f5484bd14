set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tf32_share; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
for p in tf32 fp16; do for l2 in l2-share cold-weights warm; do
  timeout 60 build/bin/ios optimize --model inception_v3 --opt ios-both --precision $p --cost-model measured --quiet --stage-timing adaptive,$l2 --out $o/inception_${p}_$l2.json > $o/inception_${p}_$l2.log 2>&1
  echo "$p $l2: $(grep -oE "cold share [0-9]+ %[^)]*" $o/inception_${p}_$l2.log | cut -c1-150) | $(grep -oE "^Fidelity: .*" $o/inception_${p}_$l2.log | cut -c1-170)"
done; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT tf32_share
