set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/blocks; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
run() { # precision blocks chunk models
  IOS_PREFETCH_BLOCKS=$2 IOS_PREFETCH_CHUNK=$3 IOS_KERNEL_CACHE=$o/kc.json timeout 150 build/bin/exp_latency --model $4 --opt ios-both --exec dataflow,dataflow+prefetch,dataflow+prefetch2,dataflow+prefetch3 --cost-model measured --precision $1 --rounds 5 --out-dir $o/$1_b$2_c$3 2>&1 | tee $o/exp_latency_$1_b$2_c$3.log | grep -E "^Model" | sed "s/^/b$2 c$3 /" | cut -c1-130
}
for bc in "1 16384" "8 4096" "32 4096" "132 2048" "1 16384"; do run fp32 $bc inception_v3,googlenet; done
for bc in "1 16384" "32 4096" "132 2048"; do run tf32 $bc inception_v3; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT blocks
