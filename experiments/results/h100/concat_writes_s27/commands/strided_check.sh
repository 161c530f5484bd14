#!/usr/bin/env bash
# SqueezeNet's tf32 sequential schedule failed its check once graph tuning timed runtime-compiled engines on
# strided slices (policies_tf32/, relative L2 0.103). With candidates on strided slices checked against the
# unfused computation: every network's sequential schedule at each reduced precision, tuned from an empty
# kernel cache, --verbose (each dropped engine named), checked against the CPU reference.
# From the repository root on the GPU machine:  strided_check.sh OUT
# Ran on commit 6741f65 plus that check (not committed), where graph tuning led with these engines; since
# then they are opt-in: to rerun with a later binary, add --conv-engine graph-rtc to its ios commands.
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
for p in tf32 fp16 bf16; do
  for m in squeezenet googlenet inception_v3; do
    timeout 90 build/bin/ios run --model $m --opt sequential --precision $p --cost-model analytic --check --verbose \
      --kernel-cache "$o/kc.json" --iters 100 > "$o/${m}_$p.log" 2>&1
    echo "${m}_$p: dropped $(grep -c 'dropped (wrong output)' "$o/${m}_$p.log") | $(grep -E '^Latency|^Check|^error' "$o/${m}_$p.log" | cut -c1-110 | tr '\n' ' ')"
  done
done
