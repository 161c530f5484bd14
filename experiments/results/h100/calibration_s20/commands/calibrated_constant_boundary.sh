set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/calibrated; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 200 build/bin/ios_gpu_tests --gtest_filter='*ColdShare*:*StageBoundary*:*MeasuredCostModel*:*SiblingWorkers*:*Screened*:*ColdTimings*' > $o/gpu_tests.log 2>&1; echo "tests rc=$?"
grep -E "^\[(l2|boundary|lane)\]|PASSED|FAILED|OK \]" $o/gpu_tests.log | cut -c1-250
for net in densenet121 googlenet squeezenet inception_v3; do
  timeout 90 build/bin/ios optimize --model $net --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json > $o/${net}_search.log 2>&1
  echo "$net: $(grep -E "^Fidelity:" $o/${net}_search.log | cut -c1-200) | $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_search.log)"
  grep -o "figures less the stage.*end to end" $o/${net}_search.log
done
tar czf $OUT/r.tar.gz -C $OUT calibrated
