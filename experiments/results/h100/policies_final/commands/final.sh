#!/usr/bin/env bash
# Search time: Inception V3 tf32 as the machine's first tf32 process from an empty kernel cache, then from
# another empty kernel cache, then re-searched with the first's kernel and stage caches; the GPU tests of the
# default stage-timing rule; then NasNet and RandWire (IOS's graph files) at fp32 and tf32 from empty kernel
# caches. Every search measured end to end.   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; c=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # tag net precision kernel-cache [flags]
  local tag=$1 net=$2 p=$3 k=$4; shift 4
  local graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  /usr/bin/time -f "%e s wall" timeout 240 build/bin/ios optimize --model $net $graphs --opt ios-both --precision $p \
    --cost-model measured --kernel-cache "$k" --json "$o/$tag.json" "$@" > "$o/$tag.log" 2>&1
  echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|weights, [0-9.]+ MB, (exceed|fit)|cold share [0-9]+ %|measured / predicted [0-9.]+( \(over the sum [0-9.]+\))?|[0-9.]+ s wall' "$o/$tag.log" | tr '\n' ' ')"
}
search iv3_tf32_first inception_v3 tf32 "$c/a.json" --stage-cache "$c/a_stages.json"
search iv3_tf32_second inception_v3 tf32 "$c/b.json"
search iv3_tf32_cached inception_v3 tf32 "$c/a.json" --stage-cache "$c/a_stages.json"
timeout 200 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.TheDefaultRule*:GpuRuntime.ColdShare*:GpuRuntime.MeasuredCostModel*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$o/gpu_tests.log" | tr '\n' ' ')"
for np in nasnet:fp32 randwire:fp32 nasnet:tf32 randwire:tf32; do
  IFS=: read -r net p <<< "$np"
  search ${net}_$p $net $p "$c/${net}_$p.json"
done
