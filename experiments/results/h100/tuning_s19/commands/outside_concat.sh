set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/outside_concat; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for net in densenet121 squeezenet inception_v3 googlenet; do
  timeout 60 build/bin/ios optimize --model $net --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json > $o/${net}_search.log 2>&1
  echo "$net: $(grep -E "^Fidelity:" $o/${net}_search.log | cut -c1-200)"
done
timeout 60 build/bin/ios run --model densenet121 --schedule $o/densenet121.json --iters 1000 --trace $o/densenet121_trace.json > $o/densenet121_run.log 2>&1
grep -E "^Latency" $o/densenet121_run.log | cut -c1-80
tar czf $OUT/r.tar.gz -C $OUT outside_concat
