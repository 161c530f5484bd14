set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/bounds; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
for p in fp32 tf32; do
IOS_KERNEL_CACHE=$o/kc_$p.json timeout 150 build/bin/exp_latency --model inception_v3,googlenet --opt greedy,dp_parallel_merge --exec staged,dataflow --cost-model measured --precision $p --rounds 5 --out-dir $o/$p 2>&1 | tee $o/exp_latency_$p.log | grep -E "^Model.*(IOS-Both)|^Critical" | cut -c1-190
done
export IOS_KERNEL_CACHE=$o/kc_fp32.json
src="--randwire-graphs build/randwire_graphs"
for net in nasnet randwire; do
  timeout 120 build/bin/ios optimize --model $net $src --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --out $o/$net.json > $o/${net}_search.log 2>&1
  echo "$net search: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_search.log)"
  timeout 60 build/bin/ios optimize --model $net $src --opt ios-both --cost-model measured --max-part-size 50 --quiet --stage-cache $o/${net}_stages.json --no-measure --out $o/${net}_cached.json > $o/${net}_cached.log 2>&1
  echo "$net re-search: $(grep -o 'Optimization cost: [0-9.]* sec' $o/${net}_cached.log) | $(grep -o 'Cost model: .*' $o/${net}_cached.log | cut -c1-120)"
  python3 -c "import json,sys; a=json.load(open('$o/$net.json')); b=json.load(open('$o/${net}_cached.json')); print('$net same schedule:', a['blocks']==b['blocks'] and a['schedule']['dataflow_barriers']==b['schedule']['dataflow_barriers'])"
done
rm -f $o/kc_*.json $o/*_stages.json
tar czf $OUT/r.tar.gz -C $OUT bounds
