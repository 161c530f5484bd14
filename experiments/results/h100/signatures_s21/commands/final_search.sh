set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final_search; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 200 build/bin/ios_gpu_tests --gtest_filter="GpuKernelCache*:GpuOps*:GpuRuntime*" > $o/gpu_tests.log 2>&1; echo "tests rc=$?"; grep -E "FAILED|PASSED|Failure" -A3 $o/gpu_tests.log | cut -c1-250 | head -20
for net in squeezenet googlenet inception_v3 densenet121 nasnet randwire; do
  timeout 200 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json --json $o/${net}_search.json > $o/${net}_search.log 2>&1
  echo "$net: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_search.log) | $(grep -E '^Fidelity:' $o/${net}_search.log | cut -c1-170)"
  grep -o "[0-9]* stages timed.*" $o/${net}_search.log | cut -c1-600
done
for net in inception_v3 nasnet randwire; do
  timeout 200 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --no-measure --out $o/${net}_cached.json > $o/${net}_cached_search.log 2>&1
  echo "$net cached: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_cached_search.log) | $(grep -o '[0-9]* stages costed, [0-9]* answered' $o/${net}_cached_search.log) | same schedule: $(cmp -s <(python3 -c "import json;print(json.load(open('$o/$net.json'))['blocks'])") <(python3 -c "import json;print(json.load(open('$o/${net}_cached.json'))['blocks'])") && echo yes || echo no)"
done
rm -f $o/*_stages.json
tar czf $OUT/r.tar.gz -C $OUT final_search
