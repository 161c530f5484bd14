#!/usr/bin/env bash
# SqueezeNet tf32's wrong output with runtime-compiled engines on strided slices (session 27): the
# sequential schedule in five ways, one kernel cache. From the repository root on the GPU machine:
#   squeezenet_debug.sh OUT [--conv-engine graph-rtc, for binaries after the engines became opt-in]
set -uo pipefail
o=$1
shift
mkdir -p "$o"
for v in "" "--no-fused-sums" "--concat-writes conv-copy" "--exec dataflow" "--no-graph"; do
  timeout 40 build/bin/ios run --model squeezenet --opt sequential --precision tf32 --cost-model analytic --check \
    --verbose --kernel-cache "$o/kc.json" --iters 20 $v "$@" > "$o/v.log" 2>&1
  echo "[$v] $(grep -E '^Check|^error' "$o/v.log" | cut -c1-90)"
done
