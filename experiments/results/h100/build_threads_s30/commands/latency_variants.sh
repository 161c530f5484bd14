#!/usr/bin/env bash
# Session 30, calls 7-12 (each was run as one inline command; collected here). Binaries of branch
# attempt/build-threads: build/bin/ios, and build/bin/ios_warm, ios_stream, ios_shared (the same with the
# experiment switches IOS_WARM_ONLY / a stream per build thread / IOS_SHARED_HANDLE).  latency_variants.sh OUT CALL
set -uo pipefail
o=$1 call=$2
s=experiments/results/h100/build_threads_s30/iv3_tf32_schedule.json
mkdir -p "$o"
run() {  # log-name binary threads [env]
  env ${4:-} timeout 100 build/bin/$2 run --model inception_v3 --precision tf32 --schedule $s --kernel-cache "${KC:-none}" \
    --build-threads $3 --iters ${ITERS:-1000} > "$o/$1.log" 2>&1
  echo "$1: $(grep -E '^Latency: ' "$o/$1.log" | cut -c1-80) $(grep -oE 'engines tuned in [0-9.]+ s' "$o/$1.log")"
}
case $call in
  7) for i in 1 2; do run off_$i ios_warm 0; run on_$i ios_warm -1; ITERS=500 run warm_$i ios_warm -1 IOS_WARM_ONLY=1; done ;;
  8) for i in 1 2 3 4 5; do run t0_$i ios 0; run t-1_$i ios -1; done ;;
  9) for i in 1 2 3 4; do run off_$i ios 0; run on_$i ios -1; run stream_$i ios_stream -1; done ;;
  10) KC=$o/kc_t0.json run tune_t0 ios 0; KC=$o/kc_t-1.json run tune_t-1 ios -1
      for i in 1 2 3; do KC=$o/kc_t0.json run file_t0_$i ios 0; KC=$o/kc_t-1.json run file_t-1_$i ios 0; done ;;
  12) for i in 1 2 3 4; do run off_$i ios_shared 0; run own_$i ios_shared -1; run shared_$i ios_shared -1 IOS_SHARED_HANDLE=1; done ;;
esac
# Call 16 (inline): one traced inference and the CUDA graph of each, tuned with and without build threads:
#   for t in 0 -1; do build/bin/ios_shared run --model inception_v3 --precision tf32 --schedule $s \
#     --kernel-cache OUT/kc_t$t.json --build-threads $t --iters 1000 --trace OUT/trace_t$t.json \
#     --graph-dot OUT/graph_t$t.dot; done
# Call 21 (inline): the same A/B under eager module loading, three rounds:
#   for i in 1 2 3; do for t in 0 -1; do CUDA_MODULE_LOADING=EAGER build/bin/ios_shared run --model inception_v3 \
#     --precision tf32 --schedule $s --kernel-cache none --build-threads $t --iters 1000; done; done
# Call 22 (inline): whether threads that only compile (IOS_WARM_ONLY: the tuning thread builds its own plans
# again) save time through the driver's JIT cache when it starts empty, two rounds:
#   for i in 1 2; do for v in off warm; do rm -rf ~/.nv; [threads 0 | IOS_WARM_ONLY=1 threads -1] \
#     build/bin/ios_shared optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
#     --quiet --build-threads $t --kernel-cache OUT/kc_${v}_$i.json --out OUT/iv3_${v}_$i.json; done; done
