set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/l2persist; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
src="--randwire-graphs build/randwire_graphs"
for net in inception_v3 nasnet randwire; do
  IOS_L2_PERSIST_MB=40 timeout 100 build/bin/ios run --model $net $src --schedule experiments/.sched/$net.json --iters 200 --check > $o/${net}_check.log 2>&1
  echo "$net check: $(grep -iE 'check|rel' $o/${net}_check.log | head -2 | cut -c1-150) $(grep '\[l2\]' $o/${net}_check.log)"
  for r in 1 2; do for mb in 0 20 40; do
    IOS_L2_PERSIST_MB=$mb timeout 60 build/bin/ios run --model $net $src --schedule experiments/.sched/$net.json --iters 1000 > $o/${net}_${mb}_$r.log 2>&1
    echo "$net persist $mb MiB round $r: $(grep -E '^Latency' $o/${net}_${mb}_$r.log | cut -c1-90)"
  done; done
done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT l2persist
