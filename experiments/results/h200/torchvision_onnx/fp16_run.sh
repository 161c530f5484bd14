#!/usr/bin/env bash
# IOS-Both fp16 beside PyTorch's CUDA graph and torch.compile fp16 on the seven squeeze-excite / mobile models.
set -uo pipefail
o=$1; mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cd experiments
timeout 470 /opt/torch/.venv/bin/python torchvision_fp16.py --ios ../build/bin/ios --out "$w/fp16" \
  --models mnasnet1_0,mobilenet_v3_large,efficientnet_b0,regnet_y_400mf,mobilenet_v3_small,regnet_y_1_6gf,efficientnet_v2_s \
  2>&1 | grep -v -i warn | tee "$o/fp16.log" | grep "^\['"
cp "$w/fp16/torchvision_fp16.csv" "$o/"
