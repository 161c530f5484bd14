set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export RANDWIRE_GRAPHS=$PWD/build/randwire_graphs
o=$OUT/c1; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
s=experiments/results/h100/search_s18/densenet/densenet121.json
for i in 1 2 3 4; do
  timeout 120 build/bin/ios run --model densenet121 --schedule $s --kernel-cache $o/kc$i.json --verbose --iters 1000 > $o/tune$i.log 2>&1
  grep -E "^Latency" $o/tune$i.log | sed "s|^|tune $i: |"
done
for i in 1 2 3 4; do
  timeout 60 build/bin/ios run --model densenet121 --schedule $s --kernel-cache $o/kc$i.json --iters 1000 > $o/file$i.log 2>&1
  grep -E "^Latency" $o/file$i.log | sed "s|^|file $i: |"
done
cp kernel_cache.json $o/kc_rw.json
timeout 280 build/bin/ios optimize --model randwire --opt ios-both --cost-model measured --max-part-size 50 --quiet --workers-per-gpu 2 --kernel-cache $o/kc_rw.json --out $o/randwire_w2.json 2>&1 | tee $o/randwire_w2.log | grep -E "Model:|Stage timing" | cut -c1-900
tar czf $OUT/r.tar.gz -C $OUT c1
