#!/usr/bin/env bash
# Breadth: timm CNNs (one or two of each family, timm's own init, 224 x 224) exported to ONNX (TorchScript
# exporter, opset 17), imported, run with Sequential on the GPU (fp32) and compared with PyTorch's output.
# [MODELS=timm:a,timm:b] run.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
families="resnet18 resnet50d resnext26ts seresnext26d_32x4d ecaresnet26t skresnet18 resnest14d res2net50_26w_4s
dla34 dpn68 densenet121 inception_v3 inception_v4 inception_resnet_v2 xception41 mobilenetv2_100 mobilenetv3_large_100
tf_mobilenetv3_large_100 efficientnet_b0 tf_efficientnet_b0 efficientnetv2_rw_t mixnet_s ghostnet_100 rexnet_100
regnetx_002 regnety_002 cspresnet50 cspdarknet53 darknet53 hrnet_w18_small selecsls42b vgg11 repvgg_a0
convnext_atto lcnet_050 fbnetc_100 mnasnet_100 spnasnet_100 hardcorenas_a tinynet_a nf_resnet26 gernet_s resnetv2_50
cs3darknet_s dm_nfnet_f0 poolformer_s12 resnetv2_50x1_bit convmixer_768_32 gcresnet33ts resnetv2_50d_gn"
# Also on the GPU, though drawn in the held-out samples of results/cpu/timm_breadth/ (which leave out `families`).
also="tresnet_m"
models=${MODELS:-$(for f in $families $also; do printf "timm:%s," "$f"; done | sed 's/,$//')}
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
cd experiments
timeout ${TIMEOUT:-560} /opt/torch/.venv/bin/python onnx_torchvision.py --ios ../build/bin/ios --out "$w/timm" \
  --models "$models" --policies sequential --pytorch-modes "" --skip-measured 2>&1 \
  | grep -v -i "warn\|torch.onnx.export" > "$o/timm.log"
echo "rc $?"; grep -E "^== |^   |ios runs failed" "$o/timm.log" | cut -c1-220
cd ..
cp "$w"/timm/onnx_torchvision.csv "$o"/timm.csv 2>/dev/null; cp "$w"/timm/onnx_torchvision.json "$o"/timm.json 2>/dev/null
(cd "$w/timm" && tar cJf "$o/ios_logs.tar.xz" */ios.log 2>/dev/null)
