#!/usr/bin/env bash
# torchvision models exported with both PyTorch exporters (TorchScript, opset 17; dynamo, its default
# opset), imported by `ios` (import only), then the dynamo exports of the squeeze-excite models run with
# Sequential and checked against PyTorch.   [MODELS=a,b] dynamo_run.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
all=googlenet,inception_v3,squeezenet1_0,squeezenet1_1,resnet50,mobilenet_v2,densenet121,efficientnet_b0,efficientnet_v2_s,mobilenet_v3_large,mobilenet_v3_small,regnet_y_400mf,regnet_y_1_6gf,mnasnet1_0,shufflenet_v2_x1_0,convnext_tiny,fcn_resnet50,deeplabv3_resnet50,lraspp_mobilenet_v3_large
cd experiments
timeout 330 /opt/torch/.venv/bin/python onnx_torchvision.py --ios ../build/bin/ios --out "$w/dyn" --dynamo --import-only \
  --models $all > "$o/dynamo_import.log" 2>&1
echo "dynamo import-only rc $?"; grep -E "^== " "$o/dynamo_import.log" | cut -c1-260
timeout 200 /opt/torch/.venv/bin/python onnx_torchvision.py --ios ../build/bin/ios --out "$w/dynrun" --dynamo \
  --models ${MODELS:-efficientnet_b0,mobilenet_v3_large,regnet_y_400mf,mnasnet1_0} --policies sequential --pytorch-modes graph \
  --search-timeout 40 > "$o/dynamo_run.log" 2>&1
echo "dynamo runs rc $?"; grep -E "^== |^   " "$o/dynamo_run.log" | cut -c1-200
cd ..
cp "$w"/dyn/onnx_torchvision.csv "$o"/dynamo_import.csv 2>/dev/null; cp "$w"/dynrun/onnx_torchvision.json "$o"/dynamo_run.json 2>/dev/null
(cd "$w/dyn" && tar cJf "$o/dynamo_ios_logs.tar.xz" */ios.log 2>/dev/null)
