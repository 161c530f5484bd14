#!/usr/bin/env bash
# Reproduces the tables of experiments/RESULTS.md on the GPU this runs on, one profile per call, each
# step under its own time limit. Logs, CSV/JSON, traces and plots go to $OUT/<profile>/ and are packed
# into $OUT/<profile>.tgz. Build first (binaries for sm_90 on a machine without a GPU:
#   IOS_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 scripts/build.sh, then copy build/bin over).
# Usage: experiments/reproduce.sh latency|pytorch|sweeps|big   (PRECISIONS=fp16,fp32 by default)
#   latency: every policy on SqueezeNet, GoogLeNet and Inception V3 (IOS README §4.2.1), GPU utilization
#            (§4.2.3)
#   pytorch: GoogLeNet and Inception V3 as PyTorch CUDA graphs and with torch.compile (reduce-overhead)
#   sweeps:  batch size (§4.2.6), specialization (§4.2.4), pruning r and s (§4.2.5), Inception V3
#   big:     every policy on NasNet and RandWire (measured searches)
set -uo pipefail
cd "$(dirname "$0")/.."
PROFILE="${1:-latency}"
PRECISIONS="${PRECISIONS:-fp16,fp32}"
OUT_DIR="${OUT:-/tmp/out}/$PROFILE"
mkdir -p "$OUT_DIR"
TORCH_LIBS=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$TORCH_LIBS/cudnn/lib:$TORCH_LIBS/cu13/lib:${LD_LIBRARY_PATH:-}"
PYTHON=/opt/torch/.venv/bin/python
[ -x "$PYTHON" ] || PYTHON=python3
B=build/bin
# IOS's RandWire graph files where this machine has them, else the seeded RandWire graphs
RANDWIRE="${RANDWIRE_GRAPHS:-../shared/ios_randwire_graphs}"
[ -d "$RANDWIRE" ] || RANDWIRE=""

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s): $*" | tee -a "$OUT_DIR/steps.log"
  timeout "$limit" "$@" > "$OUT_DIR/$name.log" 2>&1
  echo "   rc=$?" | tee -a "$OUT_DIR/steps.log"
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > "$OUT_DIR/gpu.txt"
case "$PROFILE" in
  latency)
    for p in ${PRECISIONS//,/ }; do
      step "latency_$p" 200 "$B/exp_latency" --model squeezenet,googlenet,inception_v3 --precision "$p" \
        --rounds 3 --out-dir "$OUT_DIR/$p"
    done
    step utilization 90 "$B/exp_utilization" --model inception_v3 --precision "${PRECISIONS%%,*}" \
      --out-dir "$OUT_DIR" ;;
  pytorch)
    step pytorch 500 "$PYTHON" experiments/compare_pytorch.py --models googlenet,inception_v3 \
      --modes graph,compile --precisions "$PRECISIONS" --out-dir "$OUT_DIR" ;;
  sweeps)
    p="${PRECISIONS%%,*}"
    step batchsize 240 "$B/exp_batchsize" --model inception_v3 --precision "$p" --batches 1,16,32,64,128 \
      --iters 20 --rounds 3 --out-dir "$OUT_DIR"
    step specialization 150 "$B/exp_specialization" --model inception_v3 --precision "$p" \
      --batches 1,32,128 --iters 20 --rounds 3 --out-dir "$OUT_DIR"
    step prune 150 "$B/exp_prune" --model inception_v3 --precision "$p" --cost-model analytic --rounds 3 \
      --out-dir "$OUT_DIR/prune" ;;
  big)
    # Not fp16: with seeded weights NasNet's and RandWire's activations exceed fp16's range, so the
    # CPU-reference check fails on overflow rather than on a wrong kernel.
    BIG_PRECISIONS="${BIG_PRECISIONS:-tf32,fp32}"
    for p in ${BIG_PRECISIONS//,/ }; do
      step "big_$p" 280 "$B/exp_latency" --model nasnet,randwire ${RANDWIRE:+--randwire-graphs "$RANDWIRE"} \
        --precision "$p" --rounds 2 --out-dir "$OUT_DIR/$p"
    done ;;
  *) echo "usage: $0 latency|pytorch|sweeps|big" >&2; exit 2 ;;
esac
for d in "$OUT_DIR" "$OUT_DIR"/*/; do
  step "plots_$(basename "$d")" 30 "$PYTHON" experiments/plot_results.py "$d"
done
tar czf "${OUT:-/tmp/out}/$PROFILE.tgz" -C "$(dirname "$OUT_DIR")" "$PROFILE"
tail -n 40 "$OUT_DIR/steps.log"
