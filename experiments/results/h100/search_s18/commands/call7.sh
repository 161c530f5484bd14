set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/kc_engines; mkdir -p $o
cp kernel_cache.json $o/kc.json
s=experiments/results/h100/search_s18/host_build/nasnet.json
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/kc.json --verbose > $o/file.log 2>&1
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/tuned.json --verbose > $o/tuned.log 2>&1
timeout 100 build/bin/ios run --model nasnet --schedule $s --iters 1000 --kernel-cache $o/tuned.json > $o/tuned_file.log 2>&1
grep -h "^Latency" $o/file.log $o/tuned.log $o/tuned_file.log
tar czf $OUT/r.tar.gz -C $OUT kc_engines
