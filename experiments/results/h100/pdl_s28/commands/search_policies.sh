#!/usr/bin/env bash
# Session 28, graph-rtc auto's choice at tf32/fp16 and no programmatic edges in captured graphs:
# 1. first-process measured IOS-Both searches (fresh kernel cache): search time, fidelity;
# 2. every policy at tf32 in each mode, one process, on that cache (the table of session 27's
#    policies_tf32.sh, whose binary had graph-rtc as its graph tuning but kept programmatic edges).
# From the repository root on the GPU machine:  search_policies.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
cache=$o/kernel_cache.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
for cfg in "inception_v3 tf32" "inception_v3 fp16" "googlenet tf32"; do
  set -- $cfg
  /usr/bin/time -f "%e s wall" timeout 240 build/bin/ios optimize --model $1 --opt ios-both --precision $2 \
    --cost-model measured --quiet --kernel-cache "$cache" --out "$o/$1_$2_search.json" > "$o/$1_$2_search.log" 2>&1
  echo "$1_$2_search: $(grep -E '^Model|^Kernels|^Fidelity|wall' "$o/$1_$2_search.log" | cut -c1-170 | tr '\n' ' ')"
done
IOS_KERNEL_CACHE=$cache timeout 330 build/bin/exp_latency --model inception_v3,googlenet,squeezenet \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow,staged+prefetch,dataflow+prefetch --cost-model measured \
  --precision tf32 --rounds 3 --out-dir "$o/policies_tf32" > "$o/policies_tf32.log" 2>&1
echo "exp_latency rc $?"
grep -E "^Model|^Critical|searched" "$o/policies_tf32.log" |
  sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-160
