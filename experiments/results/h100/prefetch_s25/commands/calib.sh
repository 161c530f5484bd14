set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/calib; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
timeout 120 build/bin/ios_gpu_tests --gtest_filter='GpuRuntime.ColdShare*:GpuRuntime.Prefetch*:PrefetchSuffix*' 2>&1 | tee $o/gpu_tests.log | grep -E "^\[l2\]|OK|FAIL|PASSED"
run() { # precision search_prefetch rep models
  IOS_KERNEL_CACHE=$o/kc.json timeout 140 build/bin/exp_latency --model $4 --opt ios-both --exec dataflow,staged+prefetch,dataflow+prefetch --search-prefetch-ahead $2 --cost-model measured --precision $1 --rounds 5 --out-dir $o/$1_s$2_r$3 2>&1 | tee $o/exp_latency_$1_s$2_r$3.log | grep -E "^Model" | sed -E "s/.*Model: ([a-z_0-9]+).*\[(.*)\].*cost: ([0-9.]+) sec.*Latency: (.*)/$1 s$2 r$3 \1 \2 search \3 s \4/"
}
for r in 1 2; do for sp in 0 1; do run fp32 $sp $r inception_v3,googlenet,densenet121; done; done
for r in 1 2; do for sp in 0 1; do run tf32 $sp $r inception_v3,googlenet; done; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT calib
