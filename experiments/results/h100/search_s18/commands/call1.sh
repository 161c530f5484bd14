set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/s18a; mkdir -p $o; cp kernel_cache.json $o/kc.json; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for net in squeezenet googlenet inception_v3 nasnet randwire; do
  timeout 330 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json 2>&1 | tee $o/${net}_search.log | grep -E "Model:|Stage timing" | cut -c1-600
done
tar czf $OUT/r.tar.gz -C $OUT s18a
