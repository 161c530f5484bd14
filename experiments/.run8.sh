set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/inprocess; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
s=experiments/.sched/inc_tf32.json
for round in 1 2; do
  timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --schedule $s --iters 1000 --kernel-cache none > $o/fresh_tune_$round.log 2>&1; echo "fresh tuning, round $round: $(grep -E '^Latency' $o/fresh_tune_$round.log | cut -c1-90) | $(grep -o 'Convolutions: [^|]*|[^|]*' $o/fresh_tune_$round.log)"
  timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --schedule $s --iters 1000 --kernel-cache $o/kc.json > $o/file_$round.log 2>&1; echo "kernel file, round $round: $(grep -E '^Latency' $o/file_$round.log | cut -c1-90) | $(grep -o 'Convolutions: [^|]*|[^|]*' $o/file_$round.log)"
done
timeout 100 build/bin/ios optimize --model inception_v3 --precision tf32 --opt ios-both --cost-model measured --max-part-size 50 --kernel-cache $o/kc.json --out $o/again.json > $o/again_search.log 2>&1
echo "search with the kernel file: $(grep -E '^Fidelity:' $o/again_search.log | cut -c1-200)"
timeout 60 build/bin/ios run --model inception_v3 --precision tf32 --schedule $o/again.json --iters 1000 --kernel-cache $o/kc.json > $o/again_run.log 2>&1; echo "its schedule in ios run: $(grep -E '^Latency' $o/again_run.log | cut -c1-90)"
rm -f $o/kc*.json
tar czf $OUT/r.tar.gz -C $OUT inprocess
