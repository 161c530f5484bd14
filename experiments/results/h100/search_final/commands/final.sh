#!/usr/bin/env bash
# Search time on a machine just started: Inception V3 tf32 IOS-Both as the machine's first tf32 process from an
# empty kernel cache, then re-searched from its kernel and stage caches; NasNet and RandWire (IOS's graph files)
# fp32 from empty kernel caches, every search measured end to end; then every policy at tf32 in both modes
# (exp_latency, 2 interleaved rounds, checked against the CPU reference); then the default stage-timing rule's
# GPU tests in the time left.   final.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; c=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
search() {  # tag net precision kernel-cache [flags]
  local tag=$1 net=$2 p=$3 k=$4; shift 4
  local graphs=$([ "$net" = randwire ] && echo "--randwire-graphs build/randwire_graphs" || true)
  /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model $net $graphs --opt ios-both --precision $p \
    --cost-model measured --kernel-cache "$k" --json "$o/$tag.json" "$@" > "$o/$tag.log" 2>&1
  echo "$tag rc $?: $(grep -oE 'Optimization cost: [0-9.]+ sec|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/$tag.log" | tr '\n' ' ')"
}
search iv3_tf32_first inception_v3 tf32 "$c/a.json" --stage-cache "$c/a_stages.json"
search iv3_tf32_cached inception_v3 tf32 "$c/a.json" --stage-cache "$c/a_stages.json"
search nasnet_fp32 nasnet fp32 "$c/n.json"
search randwire_fp32 randwire fp32 "$c/r.json"
timeout 330 build/bin/exp_latency --model inception_v3,nasnet,randwire --randwire-graphs build/randwire_graphs \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow --precision tf32 --cost-model measured \
  --kernel-cache "$c/exp.json" --rounds 2 --out-dir "$o/exp_tf32" > "$o/exp_tf32.log" 2>&1
echo "exp tf32 rc $?"; grep -E "^Model|relative L2|error" "$o/exp_tf32.log" | sed -E 's/ \| Batchsize: 1//; s/Optimization: //'
timeout 100 build/bin/ios_gpu_tests \
  --gtest_filter='GpuRuntime.TheDefaultRule*:GpuRuntime.ColdShare*:GpuRuntime.MeasuredCostModel*' > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$o/gpu_tests.log" | tr '\n' ' ')"
