#!/usr/bin/env bash
# Import breadth on a held-out sample of timm CNNs, without a GPU: two seeded random draws of 80 timm
# architectures (transformer and attention families left out by name), none of the 50 models of
# results/h200/timm_onnx/, each exported to ONNX (TorchScript exporter, opset 17), imported and run by the CPU
# reference (`ios run --device cpu`), compared with PyTorch in fp64.   run.sh OUT [IOS]
# Needs a virtual environment with torch, timm, onnx and numpy (CPU wheels are enough) as `python3`.
set -uo pipefail
o=$1; ios=${2:-build/bin/ios}; mkdir -p "$o"
seen=$(mktemp)
sed -n '/^families=/,/"$/p' experiments/results/h200/timm_onnx/run.sh | sed 's/families="//; s/"//' | tr ' ' '\n' | grep . > "$seen"
python3 -c "import torch, timm, onnx; print('torch', torch.__version__, 'timm', timm.__version__, 'onnx', onnx.__version__)" | tee "$o/versions.txt"
for seed in 1 2; do
  python3 -W ignore experiments/timm_breadth.py --ios "$ios" --sample 80 --seed $seed --exclude "$seen" --timeout 300 \
    --out "$o/seed$seed" 2>&1 | grep -E "^\[|of .* exported" | tee "$o/seed$seed.log"
  cp "$o/seed$seed/timm_breadth.csv" "$o/timm_breadth_seed$seed.csv"
done
