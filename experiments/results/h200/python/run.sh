#!/usr/bin/env bash
# The Python package on a GPU machine: its tests (CPU and GPU), then ios.compile on GoogLeNet, ResNet-50 and
# Inception V3 at fp16 and fp32 beside the module and torch.compile (experiments/python_compile.py).
# Run from the repository root with the package importable (pip install ., or PYTHONPATH at an unpacked
# wheel) by a Python that has torch, torchvision, onnx and onnxscript. OUT: where the results go.
set -euo pipefail
OUT=${1:?usage: run.sh OUT}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
(cd python/tests && timeout 300 "$PY" -m pytest -q -p no:cacheprovider -p no:logging . 2>&1 | tee "$OUT/pytest_gpu.log")
timeout 600 "$PY" experiments/python_compile.py --out "$OUT" --cache "$OUT/plans" \
  --models googlenet,resnet50,inception_v3 --precisions fp16,fp32 2>&1 | tee "$OUT/python_compile.log"
