set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c4; mkdir -p $o
r=experiments/results/h100/search_s18
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
bin() { [ $1 = v1 ] && echo build/bin/ios_v1 || echo build/bin/ios; }
for b in v1 new; do
  s=$(now)
  timeout 280 $(bin $b) run --model nasnet --schedule $r/final/nasnet.json --kernel-cache $o/kc_$b.json --iters 1000 > $o/tune_${b}_nasnet.log 2>&1
  echo "tune $b nasnet (rc $?, $(since $s) s): $(grep -E '^Latency' $o/tune_${b}_nasnet.log | cut -c1-60)"
done
for round in 1 2; do for b in v1 new; do
  timeout 40 $(bin $b) run --model nasnet --schedule $r/final/nasnet.json --kernel-cache $o/kc_$b.json --iters 1000 > $o/file_${b}_nasnet_$round.log 2>&1
  echo "file $b nasnet round $round: $(grep -E '^Latency' $o/file_${b}_nasnet_$round.log | cut -c1-60)"
done; done
tar czf $OUT/r.tar.gz -C $OUT c4
