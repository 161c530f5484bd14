#!/usr/bin/env bash
# Dataflow barriers (issue #14): every policy searched with the measured cost model, then each schedule
# run staged, dataflow with the barriers its search placed, and dataflow without them, interleaved in
# one exp_latency process. Usage: experiments/run_barriers.sh OUT MODELS [PRECISION] [POLICIES]
set -euo pipefail
out=$1 models=$2 precision=${3:-fp32} policies=${4:-sequential,greedy,dp_parallel_merge}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,clocks.current.memory,driver_version --format=csv \
  > "$out/gpu.txt"
tag=$(echo "$models" | tr ',' '_')_$precision
timeout "${BARRIERS_TIMEOUT:-560}" build/bin/exp_latency --model "$models" --opt "$policies" \
  --exec staged,dataflow,dataflow-free --cost-model measured --precision "$precision" --rounds 5 \
  --randwire-graphs "${RANDWIRE_GRAPHS:-build/randwire_graphs}" --out-dir "$out/$tag" 2>&1 | tee "$out/exp_latency_$tag.log"
