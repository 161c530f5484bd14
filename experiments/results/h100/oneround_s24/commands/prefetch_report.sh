set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/prefetch_report; mkdir -p $o
export IOS_KERNEL_CACHE=$o/kc.json
timeout 60 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.Prefetching*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[  (PASSED|FAILED)|FAILED"
timeout 60 build/bin/ios run --model inception_v3 --opt greedy --prefetch-weights on --check 2>&1 | tee $o/greedy_on.log | grep -E "Mode:|^Check" | cut -c1-250
timeout 60 build/bin/ios run --model inception_v3 --opt opara --prefetch-weights on --check 2>&1 | tee $o/opara_on.log | grep -E "Mode:|^Check" | cut -c1-250
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT prefetch_report
