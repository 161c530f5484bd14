#!/usr/bin/env bash
# Session 30: Inception V3 IOS-Both searches from an empty kernel cache, build threads off (0) and on
# (default: the cores but one, at most 8), alternating, three of each at tf32, then one of each at fp32;
# the first is the machine's first process. Then re-searches with the kernel and stage caches of the
# first two searches of each precision.
# From the repository root on the GPU machine:  fresh_search.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
nproc | tee -a "$o/gpu.txt"
search() {  # precision threads log-tag cache-tag
  local p=$1 t=$2 tag=$3 cache=$4
  /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --precision $p \
    --cost-model measured --quiet --build-threads $t --kernel-cache "$o/kc_${p}_$cache.json" \
    --stage-cache "$o/sc_${p}_$cache.json" --out "$o/iv3_${p}_$tag.json" > "$o/iv3_${p}_$tag.log" 2>&1
  echo "$p threads $t $tag: $(grep -E '^Model|^Kernels|^Fidelity:|wall' "$o/iv3_${p}_$tag.log" | cut -c1-240 | tr '\n' ' ')"
}
for i in 1 2 3; do
  search tf32 0 off$i off$i
  search tf32 -1 on$i on$i
done
search fp32 0 off1 off1
search fp32 -1 on1 on1
for p in tf32 fp32; do
  search $p 0 cached_off off1
  search $p -1 cached_on on1
done
