#!/usr/bin/env bash
# Session 29: merge stages charged what reading their slices costs their readers
# (sched::merged_output_readers, MeasuredCostModel::ReaderCharge), against the lead-kernel figures before
# (base/: commit 4f76acd's ios).
# 1. IOS-Both searches base and readers alternating, one kernel cache: search time, predicted/measured;
# 2. NasNet tf32 search time with readers;
# 3. every policy (and IOS-Parallel) at tf32 and fp16, one process each (exp_latency, readers).
# From the repository root on the GPU machine:  readers.sh OUT   (binaries under build/bin, base/)
set -uo pipefail
o=$1
mkdir -p "$o/base" "$o/readers"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cache=$o/kernel_cache.json
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$cache"
export IOS_KERNEL_CACHE=$cache
fidelity() { grep -E '^Fidelity' "$1" | sed -E 's/ \(sum of its (stages|segments)\)//; s/ \(CUDA graph, median of 200\)//' | cut -c1-150 | tr '\n' ' '; }
for cfg in "inception_v3 tf32" "inception_v3 fp16" "googlenet tf32" "squeezenet tf32" "inception_v3 fp32"; do
  set -- $cfg
  for v in base readers; do
    bin=build/bin/ios; [ $v = base ] && bin=build/bin/base/ios
    /usr/bin/time -f "%e s wall" timeout 100 $bin optimize --model $1 --opt ios-both --precision $2 --cost-model measured \
      --quiet --kernel-cache "$cache" --out "$o/$v/$1_$2.json" > "$o/$v/$1_$2.log" 2>&1
    echo "$v $1 $2: $(fidelity "$o/$v/$1_$2.log") $(tail -n 1 "$o/$v/$1_$2.log")"
  done
done
/usr/bin/time -f "%e s wall" timeout 110 build/bin/ios optimize --model nasnet --opt ios-both --precision tf32 \
  --cost-model measured --quiet --kernel-cache "$cache" --out "$o/readers/nasnet_tf32.json" > "$o/readers/nasnet_tf32.log" 2>&1
echo "readers nasnet tf32: $(fidelity "$o/readers/nasnet_tf32.log") $(tail -n 1 "$o/readers/nasnet_tf32.log")"
for p in tf32 fp16; do
  timeout 150 build/bin/exp_latency --model inception_v3,googlenet,squeezenet \
    --opt sequential,greedy,ios-both,opara,ios-parallel --exec staged,dataflow --cost-model measured --precision $p \
    --rounds 3 --out-dir "$o/readers/policies_$p" > "$o/readers/policies_$p.log" 2>&1
  echo "exp_latency $p rc $?"
  grep -E "^Model" "$o/readers/policies_$p.log" |
    sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
done
