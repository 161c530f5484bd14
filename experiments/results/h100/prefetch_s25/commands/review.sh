set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/review; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
timeout 100 build/bin/ios optimize --model inception_v3 --opt ios-both --prefetch-weights auto --quiet --out $o/inception_v3.json > $o/optimize.log 2>&1; echo rc=$?
grep -E "Optimization cost|Fidelity|cold share" $o/optimize.log | grep -oE "Optimization cost: [0-9.]+ sec|Fidelity.*|\(prefetching weights[^)]*\)" | cut -c1-220
timeout 100 build/bin/ios run --model inception_v3 --schedule $o/inception_v3.json --exec auto --prefetch-weights auto --check > $o/run.log 2>&1; echo rc=$?
grep -E "Exec auto|^Latency|Check|Mode" $o/run.log | cut -c1-250
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT review
