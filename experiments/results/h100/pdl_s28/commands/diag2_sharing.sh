#!/usr/bin/env bash
# Session 28 diagnosis 2 (diagnosis/2_sharing/): is it the one cuDNN plan shared by identical convolutions?
# build/bin/ios_noshare is main 2b2ec6b with IOS_NO_SHARING making every convolution build its own kernel
# (Context::conv_kernel skips its map). Also the other networks with graph-rtc, and compute-sanitizer memcheck.
O=$OUT/r; mkdir -p $O
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > $O/gpu.txt
common="--precision tf32 --cost-model analytic --check --verbose --kernel-cache $O/kc.json --conv-engine graph-rtc"
sq="run --model squeezenet --opt sequential $common"
t() { name=$1; shift; timeout 120 "$@" > $O/$name.log 2>&1; echo "$name: $(grep -E '^Check|^error' $O/$name.log | cut -c1-90)" | tee -a $O/summary.txt; }
t sq_default build/bin/ios $sq --iters 20
IOS_NO_SHARING=1 t sq_noshare build/bin/ios_noshare $sq --iters 20
t sq_default2 build/bin/ios $sq --iters 20
IOS_NO_SHARING=1 t sq_noshare_dataflow build/bin/ios_noshare $sq --iters 20 --exec dataflow
t sq_ios build/bin/ios run --model squeezenet $common --iters 20
t iv3_seq build/bin/ios run --model inception_v3 --opt sequential $common --iters 20
t iv3_ios build/bin/ios run --model inception_v3 $common --iters 20
t gn_ios build/bin/ios run --model googlenet $common --iters 20
timeout 200 compute-sanitizer --tool memcheck build/bin/ios $sq --iters 1 > $O/memcheck.log 2>&1; tail -4 $O/memcheck.log >> $O/summary.txt
cat $O/summary.txt
tar cJf $OUT/r.tar.xz -C $OUT r && rm -rf $O
