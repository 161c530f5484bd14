#!/usr/bin/env bash
# Session 32: NasNet's fp32 IOS-Both search (measured cost model, --no-measure) on all GPUs of one host by
# ios_prev (37c3446) and ios (idle workers lend their models; extra contexts made side by side), alternated,
# with ios on one GPU between them; then ios with 2 workers per GPU on all. Kernel choices from session 29's
# H100 cache file (on other GPUs a first one-GPU search tunes them).   lend_ab.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-2}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kernel_cache.json"
search() {  # binary tag devices workers-per-gpu
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/$1 optimize --model nasnet --opt ios-both --precision fp32 \
    --cost-model measured --quiet --no-measure --devices "$3" --workers-per-gpu "$4" \
    --kernel-cache "$o/kernel_cache.json" --json "$o/$1_$2.report.json" > "$o/$1_$2.log" 2>&1
  echo "$1 $2 (--devices $3 --workers-per-gpu $4): $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|[0-9.]+ s wall' "$o/$1_$2.log" | tr '\n' ' ')"
  grep -E "^Search time" "$o/$1_$2.log" | cut -c1-400
}
grep -q "H100" "$o/gpu.txt" || search ios warmup 0 1
for r in $(seq 1 "$rounds"); do
  search ios_prev "all_r$r" all 1
  search ios "all_r$r" all 1
  search ios "one_r$r" 0 1
done
search ios all_w2 all 2
rm -f "$o/kernel_cache.json"
