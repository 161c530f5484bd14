#!/usr/bin/env bash
# One device call that re-verifies the runtime and re-runs every experiment, each step under its own
# time limit, writing logs, CSV/JSON, traces and plots under $OUT/h100 and packing them into one
# archive (the device tool returns a limited number of files). Build first, on the CPU machine:
#   IOS_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 scripts/build.sh   (then carry build/bin)
# Usage on the GPU machine: experiments/run_h100.sh verify|big|sweeps — each fits one 10-minute call:
#   verify: GPU tests, exp_latency on the four fast networks, PyTorch, utilization
#   big:    exp_latency on NasNet and RandWire (measured searches)
#   sweeps: pruning, batch size, specialization
set -uo pipefail
cd "$(dirname "$0")/.."
PROFILE="${1:-verify}"
OUT_DIR="${OUT:-/tmp/out}/h100"
mkdir -p "$OUT_DIR"
TORCH_LIBS=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$TORCH_LIBS/cudnn/lib:$TORCH_LIBS/cu13/lib:${LD_LIBRARY_PATH:-}"
PYTHON=/opt/torch/.venv/bin/python
[ -x "$PYTHON" ] || PYTHON=python3
B=build/bin

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s): $*" | tee -a "$OUT_DIR/steps.log"
  timeout "$limit" "$@" > "$OUT_DIR/$name.log" 2>&1
  echo "   rc=$?" | tee -a "$OUT_DIR/steps.log"
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > "$OUT_DIR/gpu.txt"
case "$PROFILE" in
  verify)
    step gpu_tests 130 "$B/ios_gpu_tests"
    step exp_latency 180 "$B/exp_latency" --model ios_sample,squeezenet,googlenet,inception_v3 --rounds 3 \
      --out-dir "$OUT_DIR"
    step compare_pytorch 90 "$PYTHON" experiments/compare_pytorch.py --modes eager,graph --out-dir "$OUT_DIR" \
      --ours "$OUT_DIR/latency.csv"
    step exp_utilization 80 "$B/exp_utilization" --out-dir "$OUT_DIR" ;;
  big)
    step exp_latency_big 520 "$B/exp_latency" --model nasnet,randwire --rounds 3 --out-dir "$OUT_DIR/big" ;;
  sweeps)
    step exp_prune 240 "$B/exp_prune" --model inception_v3 --rounds 3 --out-dir "$OUT_DIR/prune"
    step exp_batchsize 180 "$B/exp_batchsize" --iters 20 --rounds 3 --out-dir "$OUT_DIR"
    step exp_specialization 100 "$B/exp_specialization" --iters 20 --rounds 3 --out-dir "$OUT_DIR" ;;
  *) echo "usage: $0 verify|big|sweeps" >&2; exit 2 ;;
esac
step plots 20 "$PYTHON" experiments/plot_results.py "$OUT_DIR"
tar czf "${OUT:-/tmp/out}/h100.tgz" -C "$(dirname "$OUT_DIR")" h100
tail -n 40 "$OUT_DIR/steps.log"
