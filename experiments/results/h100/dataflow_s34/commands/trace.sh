#!/usr/bin/env bash
# Session 34: why GoogLeNet tf32's IOS-Both dataflow graph (every barrier kept) ran 5 % slower than its staged
# graph in exp_latency while the search timed it 1 % faster. The schedule searched once; both modes run
# alternated (1000 replays, three each), then one CUPTI-traced inference and the CUDA graph (Graphviz) of each.
# Then Inception V3 tf32 IOS-Both searched four more times (fidelity), one kernel cache.
# From the repository root on the GPU machine:  trace.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
K=$o/kc.json
timeout 100 build/bin/ios optimize --model googlenet --opt ios-both --precision tf32 --cost-model measured --quiet \
  --kernel-cache "$K" --out "$o/googlenet.json" > "$o/search_googlenet.log" 2>&1
grep -E "^Note|^Fidelity" "$o/search_googlenet.log" | cut -c1-200
for i in 1 2 3; do
  for m in staged dataflow; do
    timeout 60 build/bin/ios run --schedule "$o/googlenet.json" --model googlenet --precision tf32 --exec $m \
      --iters 1000 --kernel-cache "$K" > "$o/run_${m}_$i.log" 2>&1
    echo "$m $i: $(grep -oE 'Latency: [0-9.]+ ms|cuda-graph, [^|]*' "$o/run_${m}_$i.log" | tr '\n' ' ' | cut -c1-160)"
  done
done
for m in staged dataflow; do
  timeout 60 build/bin/ios run --schedule "$o/googlenet.json" --model googlenet --precision tf32 --exec $m \
    --iters 50 --kernel-cache "$K" --trace "$o/trace_$m.json" --graph-dot "$o/graph_$m.dot" > "$o/trace_$m.log" 2>&1
  echo "traced $m rc $?: $(grep -oE 'Latency: [0-9.]+ ms' "$o/trace_$m.log")"
done
fidelity() { grep -E '^Fidelity' "$1" | sed -E 's/ \(sum of its (stages|segments)\)//; s/ \(CUDA graph, median of 200\)//' | cut -c1-150 | tr '\n' ' '; }
for i in 1 2 3 4; do
  timeout 60 build/bin/ios optimize --model inception_v3 --opt ios-both --precision tf32 --cost-model measured \
    --quiet --kernel-cache "$K" --out "$o/iv3_tf32_$i.json" > "$o/iv3_tf32_$i.log" 2>&1
  echo "iv3 tf32 $i: $(fidelity "$o/iv3_tf32_$i.log") $(grep -oE 'less the stage boundary, [0-9.]+ us a replay' "$o/iv3_tf32_$i.log")"
done
rm -rf "$K" "$K.plans"
xz -9 "$o"/*.dot "$o"/trace_*.json
