set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/l2_rules; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for net in densenet121 googlenet squeezenet inception_v3; do
  for rule in adaptive 1/2/2-4/0.05,cold-weights 1/2/2-4/0.05,warm; do
    if [ "$rule" = "1/2/2-4/0.05,warm" ] && [ $net != inception_v3 ]; then continue; fi
    tag=$(echo $rule | sed 's/.*,//')
    timeout 90 build/bin/ios optimize --model $net --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-timing $rule --stage-cache $o/${net}_${tag}_stages.json --out $o/${net}_${tag}.json > $o/${net}_${tag}_search.log 2>&1
    echo "$net $tag: $(grep -E "^Fidelity:" $o/${net}_${tag}_search.log | cut -c1-200) | $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_${tag}_search.log)"
  done
done
tar czf $OUT/r.tar.gz -C $OUT l2_rules
