set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c8; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
r=experiments/results/h100/search_s18
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
bin() { [ $1 = v1 ] && echo build/bin/ios_v1 || echo build/bin/ios; }
args() { [ $1 = randwire ] && echo "--model randwire --randwire-graphs build/randwire_graphs --schedule $r/measured_floors/randwire.json" || echo "--model nasnet --schedule $r/final/nasnet.json"; }
for net in nasnet randwire; do for b in new v1; do
  s=$(now)
  timeout 120 $(bin $b) run $(args $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/tune_${b}_$net.log 2>&1
  echo "tune $b $net (rc $?, $(since $s) s): $(grep -E '^Latency' $o/tune_${b}_$net.log | cut -c1-60)"
done; done
for round in 1 2; do for net in nasnet randwire; do for b in v1 new; do
  timeout 40 $(bin $b) run $(args $net) --kernel-cache $o/kc_$b.json --iters 1000 > $o/file_${b}_${net}_$round.log 2>&1
  echo "file $b $net round $round: $(grep -E '^Latency' $o/file_${b}_${net}_$round.log | cut -c1-60)"
done; done; done
tar czf $OUT/r.tar.gz -C $OUT c8
