set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export RANDWIRE_GRAPHS=$PWD/build/randwire_graphs
o=$OUT/c2; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
r=experiments/results/h100/search_s18
sched() { case $1 in nasnet) echo $r/final/nasnet.json;; densenet121) echo $r/densenet/densenet121.json;; *) echo $r/measured_floors/$1.json;; esac; }
nets="squeezenet googlenet inception_v3 densenet121 nasnet randwire"
bin() { [ $1 = v1 ] && echo build/bin/ios_v1 || echo build/bin/ios; }
for b in v1 new; do for net in $nets; do
  s=$(date +%s.%N)
  timeout 150 $(bin $b) run --model $net --schedule $(sched $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/tune_${b}_$net.log 2>&1
  echo "tune $b $net ($(echo "$(date +%s.%N) - $s" | bc) s): $(grep -E '^Latency' $o/tune_${b}_$net.log | cut -c1-60)"
done; done
for round in 1 2; do for net in $nets; do for b in v1 new; do
  timeout 60 $(bin $b) run --model $net --schedule $(sched $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/file_${b}_${net}_$round.log 2>&1
  echo "file $b $net round $round: $(grep -E '^Latency' $o/file_${b}_${net}_$round.log | cut -c1-60)"
done; done; done
for i in 2 3 4; do
  timeout 100 build/bin/ios run --model densenet121 --schedule $(sched densenet121) --kernel-cache $o/kc_d$i.json --iters 1000 > $o/tune_d$i.log 2>&1
  echo "densenet fresh tuning $i: $(grep -E '^Latency' $o/tune_d$i.log | cut -c1-60)"
done
tar czf $OUT/r.tar.gz -C $OUT c2
