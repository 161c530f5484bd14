#!/usr/bin/env bash
# Import breadth on held-out samples of timm CNNs, without a GPU: two seeded random draws of 80 timm
# architectures exported with the TorchScript exporter (opset 17) and one of 30 with the dynamo exporter
# (opset 18), transformer and attention families left out by name, none of the models of
# results/h200/timm_onnx/, each imported and run by the CPU reference (`ios run --device cpu`) and compared
# with PyTorch in fp64.   run.sh OUT [IOS]
# Needs a virtual environment with torch, timm, onnx, onnxscript and numpy (CPU wheels are enough) as `python3`.
set -uo pipefail
o=$1; ios=${2:-build/bin/ios}; mkdir -p "$o"
seen=$(mktemp)
sed -n '/^families=/,/"$/p' experiments/results/h200/timm_onnx/run.sh | sed 's/families="//; s/"//' | tr ' ' '\n' | grep . > "$seen"
python3 -c "import torch, timm, onnx; print('torch', torch.__version__, 'timm', timm.__version__, 'onnx', onnx.__version__)" | tee "$o/versions.txt"
draw() {  # name seed sample [flags]
  python3 -W ignore experiments/timm_breadth.py --ios "$ios" --sample "$3" --seed "$2" --exclude "$seen" --timeout 300 \
    "${@:4}" --out "$o/$1" 2>&1 | grep -E "^\[[0-9]|of .* exported" | tee "$o/$1.log"
  cp "$o/$1/timm_breadth.csv" "$o/timm_breadth_$1.csv"
}
draw seed1 1 80
draw seed2 2 80
draw dynamo_seed3 3 30 --dynamo
draw seed4 4 40
draw dynamo_seed5 5 30 --dynamo
