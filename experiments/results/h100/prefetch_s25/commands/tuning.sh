set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/tuning; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in tf32 fp16; do for m in inception_v3 googlenet; do
  timeout 120 build/bin/ios optimize --model $m --opt ios-both --precision $p --cost-model measured --verbose --quiet --kernel-cache $o/kc_$p.json --prefetch-weights auto > $o/${m}_$p.log 2> $o/${m}_$p.err
  grep -E "Fidelity|Kernels:|Optimization cost" $o/${m}_$p.log | cut -c1-250
  grep -c "candidate" $o/${m}_$p.err
done; done
tar czf $OUT/r.tar.gz -C $OUT tuning
