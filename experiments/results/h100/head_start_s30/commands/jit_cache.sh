#!/usr/bin/env bash
# Session 30: what the driver's JIT cache (~/.nv/ComputeCache) does for cuDNN's runtime-compiled plans.
# On a machine just started (no ~/.nv): an Inception V3 tf32 IOS-Both search, one with CUDA_CACHE_DISABLE=1,
# one more; each from an empty kernel cache.   jit_cache.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
ls -la ~/.nv/ComputeCache 2>&1 | head -3; du -sh ~/.nv 2>&1
for v in normal nocache normal2; do
  e=""; [ $v = nocache ] && e="CUDA_CACHE_DISABLE=1"
  env $e timeout 100 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
    --quiet --kernel-cache "$o/kc_$v.json" --out "$o/iv3_$v.json" > "$o/iv3_$v.log" 2>&1
  echo "$v: $(grep -oE 'Optimization cost: [0-9.]+ sec|engines tuned in.*first runs\)' "$o/iv3_$v.log" | tr '\n' ' ')"
done
du -sh ~/.nv 2>&1
