#!/usr/bin/env bash
# Session 33: one and two DP workers on one GPU (--workers-per-gpu 1 | 2), alternated over ROUNDS rounds: NasNet
# fp32 (session 29's H100 kernel cache file) and Inception V3 tf32 (a first search fills the kernel cache)
# IOS-Both searches, each schedule then run end to end staged and dataflow (`ios optimize`'s fidelity lines):
# search time against the measured latency of what it found.   workers.sh OUT [ROUNDS]
set -uo pipefail
o=$1
rounds=${2:-3}
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
xz -dc experiments/results/h100/lead_kernel_s29/spans/kernel_cache.json.xz > "$o/kc_nasnet.json"
search() {  # tag model precision workers
  /usr/bin/time -f "%e s wall" timeout 150 build/bin/ios optimize --model "$2" --opt ios-both --precision "$3" \
    --cost-model measured --quiet --workers-per-gpu "$4" --kernel-cache "$o/kc_$2.json" --out "$o/$1.json" \
    --json "$o/$1.report.json" > "$o/$1.log" 2>&1
  echo "$1: $(grep -oE 'Optimization cost: [0-9.]+ sec|Latency: [0-9.]+ ms|measured end to end [0-9.]+ ms|[0-9.]+ s wall' "$o/$1.log" | tr '\n' ' ')"
}
search iv3_first inception_v3 tf32 1
for r in $(seq 1 "$rounds"); do
  for w in 1 2; do search "nasnet_w${w}_r$r" nasnet fp32 $w; search "iv3_w${w}_r$r" inception_v3 tf32 $w; done
done
rm -f "$o"/kc_*.json "$o"/*.json.tmp
