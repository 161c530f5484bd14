#!/usr/bin/env bash
# Session 28 diagnosis 3 (diagnosis/3_edges/): build/bin/ios_main is main 2b2ec6b, build/bin/ios the same with every
# programmatic edge of a captured graph made a full dependency (the fix, before graph-rtc became auto's choice):
# correctness on SqueezeNet at tf32/fp16, then latency A/B alternating (analytic schedules, --exec auto).
O=$OUT/r; mkdir -p $O
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > $O/gpu.txt
t() { name=$1; shift; timeout 150 "$@" > $O/$name.log 2>&1; echo "$name: $(grep -E '^Mode|Mode:' $O/$name.log | grep -oE 'Mode: .*' | cut -c1-90) | $(grep -E '^Latency' $O/$name.log | cut -c1-24) | $(grep -E '^Check|^error' $O/$name.log | cut -c1-70)" | tee -a $O/summary.txt; }
for p in tf32 fp16; do
 c="--precision $p --cost-model analytic --check --kernel-cache $O/kc.json --conv-engine graph-rtc --iters 50"
 for b in ios_main ios; do
  t sq_seq_${p}_$b build/bin/$b run --model squeezenet --opt sequential $c
  t sq_seq_df_${p}_$b build/bin/$b run --model squeezenet --opt sequential $c --exec dataflow
  t sq_ios_${p}_$b build/bin/$b run --model squeezenet $c --exec auto
 done
done
for r in 1 2; do for m in googlenet inception_v3; do for e in graph graph-rtc; do for b in ios_main ios; do
  t ${m}_${e}_${b}_$r build/bin/$b run --model $m --precision tf32 --cost-model analytic --check --kernel-cache $O/kc.json --conv-engine $e --iters 300 --exec auto
done; done; done; done
t bf16_sq build/bin/ios run --model squeezenet --precision bf16 --cost-model analytic --check --kernel-cache $O/kc.json --conv-engine graph-rtc --exec auto
t fp32_sq build/bin/ios run --model squeezenet --precision fp32 --cost-model analytic --check --kernel-cache $O/kc.json --conv-engine graph-rtc --exec auto
cp $O/summary.txt $OUT/
tar cJf $OUT/r.tar.xz -C $OUT r && rm -rf $O
