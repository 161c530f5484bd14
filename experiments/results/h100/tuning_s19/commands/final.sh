set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c9; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
r=experiments/results/h100/search_s18
sched() { case $1 in densenet121) echo $r/densenet/densenet121.json;; *) echo $r/measured_floors/$1.json;; esac; }
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
bin() { [ $1 = v1 ] && echo build/bin/ios_v1 || echo build/bin/ios; }
nets="densenet121 squeezenet googlenet inception_v3"
for b in new v1; do for net in $nets; do
  s=$(now)
  timeout 60 $(bin $b) run --model $net --schedule $(sched $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/tune_${b}_$net.log 2>&1
  echo "tune $b $net (rc $?, $(since $s) s): $(grep -E '^Latency' $o/tune_${b}_$net.log | cut -c1-60)"
done; done
for net in $nets; do for b in v1 new; do
  timeout 40 $(bin $b) run --model $net --schedule $(sched $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/file_${b}_${net}.log 2>&1
  echo "file $b $net: $(grep -E '^Latency' $o/file_${b}_${net}.log | cut -c1-60)"
done; done
cp $o/kc_new.json $o/kc_search.json
timeout 90 build/bin/ios optimize --model densenet121 --opt ios-both --cost-model measured --max-part-size 50 --quiet --kernel-cache $o/kc_search.json --out $o/densenet121.json > $o/densenet_search.log 2>&1
grep -E "Model:|Fidelity" $o/densenet_search.log | cut -c1-300
for i in 1 2; do
  timeout 60 build/bin/ios run --model densenet121 --schedule $o/densenet121.json --kernel-cache none --iters 1000 > $o/densenet_own_tuning_$i.log 2>&1
  echo "densenet search schedule, own tuning $i: $(grep -E '^Latency' $o/densenet_own_tuning_$i.log | cut -c1-60)"
done
tar czf $OUT/r.tar.gz -C $OUT c9
