set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/final; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*:GpuOps*:GpuRuntime*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
# run.sh's main job
timeout 100 build/bin/ios optimize --model inception_v3 --opt ios-both --prefetch-weights auto --quiet --out $o/inception_v3.ios-both.json > $o/main_optimize.log 2>&1
grep -E "Optimization cost|Kernels|Fidelity" $o/main_optimize.log | cut -c1-250
timeout 100 build/bin/ios run --model inception_v3 --schedule $o/inception_v3.ios-both.json --exec auto --prefetch-weights auto --check > $o/main_run.log 2>&1
grep -E "Exec auto|^Latency|Check" $o/main_run.log | cut -c1-300
# searches, default flags; then a cached re-search
for net in nasnet randwire randwire; do
  n=$net; [ -f $o/${net}_search.log ] && n=${net}_again
  timeout 110 build/bin/ios optimize --model $net --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$n.json > $o/${n}_search.log 2>&1
  [ -f $o/${net}_stages.json ] && [ $n = $net ] && mv $o/${net}_stages.json $o/${net}_stages_first.json
  echo "$n: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/${n}_search.log) | $(grep -oE "Kernels: [0-9]+ engines tuned in [0-9.]+ s" $o/${n}_search.log) | $(grep -oE "Fidelity: .*" $o/${n}_search.log | cut -c1-170)"
done
timeout 30 build/bin/ios optimize --model randwire --randwire-graphs build/randwire_graphs --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/randwire_stages_first.json --no-measure --out $o/randwire_cached.json > $o/randwire_cached_search.log 2>&1
same=$(python3 -c "
import json,sys
def core(f):
    d=json.load(open(f)); s=d['schedule']
    return d['blocks'], {k:v for k,v in s.items() if k not in ('search_seconds','notes','latency_ms','dataflow_latency_ms')}
print('yes' if core('$o/randwire.json')==core('$o/randwire_cached.json') else 'no')")
echo "randwire cached: $(grep -oE "Optimization cost: [0-9.]+ sec" $o/randwire_cached_search.log); same stages and barriers as the first search: $same"
rm -f $o/kc.json $o/*_stages*.json
tar czf $OUT/r.tar.gz -C $OUT final
