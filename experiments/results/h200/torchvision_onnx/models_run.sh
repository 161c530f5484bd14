#!/usr/bin/env bash
# The activation and op tests on the GPU, then torchvision models exported to ONNX (TorchScript exporter,
# opset 17), imported and run with two policies, checked against PyTorch.   [MODELS=a,b] models_run.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
timeout 300 build/bin/ios_gpu_tests --gtest_filter='*GpuActivations*:*GpuOps*' > "$o/gpu_tests.log" 2>&1
echo "gpu tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)  \]' "$o/gpu_tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|node " "$o/gpu_tests.log" | head -20
cd experiments
timeout 420 /opt/torch/.venv/bin/python onnx_torchvision.py --ios ../build/bin/ios --out "$w/tv" \
  --models ${MODELS:-efficientnet_b0,mobilenet_v3_large,mobilenet_v3_small,regnet_y_400mf,mnasnet1_0,efficientnet_v2_s,regnet_y_1_6gf,shufflenet_v2_x1_0,convnext_tiny,fcn_resnet50,deeplabv3_resnet50,lraspp_mobilenet_v3_large} \
  --policies sequential,dp_parallel_merge --pytorch-modes graph --search-timeout 60 2>&1 | tee "$o/onnx_torchvision.log" | grep -v Warning | tail -60
cd ..
cp "$w"/tv/onnx_torchvision.csv "$w"/tv/onnx_torchvision.json "$o"/ 2>/dev/null
(cd "$w/tv" && tar cJf "$o/ios_logs.tar.xz" */ios.log 2>/dev/null)
