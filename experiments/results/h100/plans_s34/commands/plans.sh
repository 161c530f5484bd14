#!/usr/bin/env bash
# Session 34: the plans cuDNN compiles at run time kept beside the kernel cache file (cuDNN's serialization)
# and loaded by later processes instead of compiled again.
# 1. GPU tests of the kernel cache (a second process loads the compiled plans);
# 2. Inception V3 tf32: a measured IOS-Both search from an empty kernel cache (the plans written), then
#    ios run of its schedule, alternated: A with the plans, B with the same file's choices but no plans
#    (a copy of the file alone; B compiles them again): wall time and latency, three each, --check;
# 3. the search again from each cache (A: plans; B: none), twice each, alternated, with empty stage caches.
# From the repository root on the GPU machine:  plans.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 200 build/bin/ios_gpu_tests --gtest_filter='GpuKernelCache*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?"; grep -E "kernel cache\]|FAILED|PASSED|Failure" "$o/gpu_tests.log" | head -20
K=$o/kc.json
/usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 \
  --cost-model measured --quiet --kernel-cache "$K" --out "$o/iv3.json" > "$o/search0.log" 2>&1
echo "first search: $(grep -oE 'Optimization cost: [0-9.]+ sec|[0-9]+ engines tuned in [0-9.]+ s|[0-9.]+ s wall' "$o/search0.log" | tr '\n' ' ')"
echo "plan files: $(ls "$K.plans" | wc -l), $(du -sh "$K.plans" | cut -f1)"
fresh_b() { cp "$K" "$o/kcB.json"; rm -rf "$o/kcB.json.plans"; }
for i in 1 2 3; do
  for v in A B; do
    k=$K; [ $v = B ] && { fresh_b; k=$o/kcB.json; }
    /usr/bin/time -f "%e s wall" timeout 60 build/bin/ios run --schedule "$o/iv3.json" --model inception_v3 \
      --precision tf32 --check --kernel-cache "$k" --json "$o/run$v$i.json" > "$o/run$v$i.log" 2>&1
    echo "run $v$i: $(grep -oE 'Latency: [0-9.]+ ms|from the kernel cache file [0-9]+ \([0-9]+ of them compiled plans loaded|PASS|FAIL|[0-9.]+ s wall' "$o/run$v$i.log" | tr '\n' ' ')"
  done
done
for i in 1 2; do
  for v in A B; do
    k=$K; [ $v = B ] && { fresh_b; k=$o/kcB.json; }
    /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 \
      --cost-model measured --quiet --kernel-cache "$k" --out "$o/research$v$i.json" > "$o/research$v$i.log" 2>&1
    echo "re-search $v$i: $(grep -oE 'Optimization cost: [0-9.]+ sec|measured / predicted [0-9.]+|[0-9.]+ s wall' "$o/research$v$i.log" | tr '\n' ' ')"
  done
done
rm -rf "$K" "$K.plans" "$o/kcB.json" "$o/kcB.json.plans"
