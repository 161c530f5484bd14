#!/usr/bin/env bash
# Our depthwise kernel end to end: `ios run --own-kernels on` against `off` (cuDNN alone), alternated in 3
# rounds, beside PyTorch's CUDA graph and torch.compile, fp32 (TF32 off) and fp16, batch 1
# (experiments/own_kernels.py). Usage, on the GPU machine from the repository root:
#   experiments/results/h200/own_kernels/run.sh OUT [MODELS]
set -uo pipefail
o=$1; models=${2:-mobilenet_v2,efficientnet_b0,convnext_tiny,mnasnet1_0}
mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$o/gpu.txt"
cd experiments
timeout ${IOS_RUN_TIMEOUT:-560} /opt/torch/.venv/bin/python own_kernels.py --ios ../build/bin/ios --out "$w/runs" --models "$models" \
  --precisions fp32,fp16 --rounds 3 2>&1 | grep -v -i warn | tee -a "$o/own_kernels.log"
tag=$(echo "$models" | tr ',' '_' | cut -c1-40)
cp "$w/runs/own_kernels.csv" "$o/own_kernels_$tag.csv"; cp "$w/runs/own_kernels.json" "$o/own_kernels_$tag.json"
