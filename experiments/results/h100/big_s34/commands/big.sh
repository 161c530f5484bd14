#!/usr/bin/env bash
# Session 34: the large networks at tf32 with the session's binaries. NasNet then RandWire (IOS's graph files)
# IOS-Both searched from an empty kernel cache (NasNet is the machine's first tf32 process), each schedule run end
# to end; then every policy on DenseNet-121, NasNet and RandWire, staged and dataflow, one process (exp_latency).
# From the repository root on the GPU machine:  big.sh OUT   (IOS's RandWire graph files under build/randwire_graphs)
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
export IOS_KERNEL_CACHE=$o/kc.json
for m in nasnet randwire; do
  /usr/bin/time -f "%e s wall" timeout 120 build/bin/ios optimize --model $m --randwire-graphs build/randwire_graphs \
    --opt ios-both --precision tf32 --cost-model measured --quiet --out "$o/${m}_tf32.json" > "$o/${m}_tf32.log" 2>&1
  echo "$m tf32: $(grep -oE 'Optimization cost: [0-9.]+ sec|measured / predicted [0-9.]+|[0-9]+ engines tuned in [0-9.]+ s|[0-9.]+ s compiling|[0-9.]+ s wall' "$o/${m}_tf32.log" | tr '\n' ' ')"
done
timeout 330 build/bin/exp_latency --model densenet121,nasnet,randwire --randwire-graphs build/randwire_graphs \
  --opt sequential,greedy,ios-both,opara --exec staged,dataflow --cost-model measured --precision tf32 --rounds 3 \
  --out-dir "$o/policies_tf32" > "$o/policies_tf32.log" 2>&1
echo "exp_latency tf32 rc $?"
grep -E "^Model|^Critical" "$o/policies_tf32.log" |
  sed -E "s/.*Model: ([a-z_0-9]+).*Optimization: (.*) \| Batch.*Latency: (.*)/\1 \2 \3/" | cut -c1-120
rm -rf "$o/kc.json" "$o/kc.json.plans"
