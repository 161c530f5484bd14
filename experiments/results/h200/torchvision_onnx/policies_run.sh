#!/usr/bin/env bash
# torchvision models (the seven squeeze-excite / mobile ones unless MODELS names others) (TorchScript exporter, opset 17) run with every policy
# (analytic-model schedules) at fp32 and fp16, each output checked against the CPU reference (`--check`:
# fp32 rel-L2 < 1e-4, fp16 < 1e-2).   [MODELS=a,b] policies_run.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"; w=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}
export IOS_KERNEL_CACHE=$w/kc.json
models=${MODELS:-efficientnet_b0,efficientnet_v2_s,mobilenet_v3_large,mobilenet_v3_small,regnet_y_400mf,regnet_y_1_6gf,mnasnet1_0}
(cd experiments && timeout 200 /opt/torch/.venv/bin/python onnx_torchvision.py --ios ../build/bin/ios --out "$w/tv" \
  --import-only --models $models > "$o/export.log" 2>&1)
echo "model,policy,precision,rc,latency_ms,rel_l2_vs_cpu_reference" > "$o/policies.csv"
for m in ${models//,/ }; do
  for p in fp32 fp16; do
    for pol in sequential greedy dp_merge dp_parallel dp_parallel_merge opara; do
      timeout 60 build/bin/ios run --onnx "$w/tv/$m/$m.onnx" --input "$w/tv/$m/x.npy" --opt $pol --cost-model analytic \
        --precision $p --check --iters 50 --quiet --json "$w/r.json" > "$w/run.log" 2>&1
      rc=$?
      row=$(/opt/torch/.venv/bin/python -c "import json; r=json.load(open('$w/r.json')); print(f\"{r['latency_ms']['median']:.4f},{r['check']['relative_l2_error']:.3e}\")" 2>/dev/null || echo ",")
      echo "$m,$pol,$p,$rc,$row" | tee -a "$o/policies.csv"
      rm -f "$w/r.json"
    done
  done
done
