set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/stage_gap; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for net in densenet121 squeezenet; do
  timeout 90 build/bin/ios optimize --model $net --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json > $o/${net}_search.log 2>&1
  grep -E "Fidelity:" $o/${net}_search.log | cut -c1-200
  timeout 60 build/bin/ios run --model $net --schedule $o/$net.json --iters 1000 --trace $o/${net}_trace.json > $o/${net}_run.log 2>&1
  grep -E "^Latency" $o/${net}_run.log | cut -c1-80
done
tar czf $OUT/r.tar.gz -C $OUT stage_gap
