set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c3; mkdir -p $o
r=experiments/results/h100/search_s18
s=$(date +%s.%N)
timeout 100 stdbuf -oL -eL build/bin/ios run --model nasnet --schedule $r/final/nasnet.json --kernel-cache $o/kc.json --verbose --iters 100 > $o/nasnet_verbose.log 2>&1
echo "rc=$? after $(python3 -c "print($(date +%s.%N) - $s)") s"
grep -c candidate $o/nasnet_verbose.log; tail -n 4 $o/nasnet_verbose.log | cut -c1-400
tar czf $OUT/r.tar.gz -C $OUT c3
