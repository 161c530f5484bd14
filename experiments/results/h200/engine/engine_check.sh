#!/usr/bin/env bash
# GPU check of the engine API: tests, build/run --plan in two processes, the example on an ONNX model,
# and the latency of the previous commit's binary against this one, interleaved.
set -u
export LD_LIBRARY_PATH=$PWD/.device/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export IOS_KERNEL_CACHE=$OUT/kernel_cache.json
PY=/opt/torch/.venv/bin/python
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $OUT/gpu.txt
echo "== engine GPU tests"
timeout 240 build/bin/ios_gpu_tests --gtest_filter='GpuEngine.*' 2>&1 | tail -25 | tee $OUT/engine_tests.log
echo "== ios build / ios run --plan"
timeout 150 build/bin/ios build --model inception_v3 --precision fp16 --exec auto --save $OUT/iv3.plan 2>&1 | tee $OUT/build.log
timeout 90 build/bin/ios run --plan $OUT/iv3.plan --check --output $OUT/a.npy 2>&1 | tee $OUT/run_plan1.log
timeout 90 build/bin/ios run --plan $OUT/iv3.plan --output $OUT/b.npy 2>&1 | tee $OUT/run_plan2.log
cmp $OUT/a.npy $OUT/b.npy && echo "run --plan twice: SAME BITS" | tee -a $OUT/run_plan2.log
echo "== example on ONNX (measured search)"
timeout 60 $PY -c "import torch, torchvision; m=torchvision.models.resnet18().eval(); torch.onnx.export(m, (torch.randn(1,3,224,224),), '$OUT/r18.onnx', opset_version=17, dynamo=False)" 2>&1 | tail -2
timeout 150 build/bin/engine_save_load build $OUT/r18.onnx $OUT/r18.plan --precision fp16 2>&1 | tee $OUT/example.log
timeout 60 build/bin/engine_save_load run $OUT/r18.plan 2>&1 | tee -a $OUT/example.log
timeout 60 build/bin/ios run --plan $OUT/r18.plan --output $OUT/r18_cli.npy 2>&1 | tee -a $OUT/example.log
$PY -c "import numpy as np; a=np.load('$OUT/r18.plan.out.npy'); b=np.load('$OUT/r18_cli.npy'); print('ios run --plan vs the building process:', 'SAME BITS' if a.tobytes()==b.tobytes() else 'DIFFER')" 2>&1 | tee -a $OUT/example.log
rm -f $OUT/r18.onnx
echo "== before/after latency, interleaved"
echo "model,precision,binary,round,latency_ms" > $OUT/before_after.csv
for p in fp16 tf32; do
  for m in inception_v3 googlenet squeezenet; do
    timeout 120 build/bin/ios optimize --model $m --precision $p --out $OUT/s_${m}_$p.json --quiet > $OUT/opt_${m}_$p.log 2>&1
    for r in 1 2 3; do
      for b in before after; do
        bin=build/bin/ios; [ $b = before ] && bin=.device/ios_before
        l=$(timeout 60 $bin run --model $m --precision $p --schedule $OUT/s_${m}_$p.json --iters 1000 2>&1 | grep -o 'Latency: [0-9.]*' | cut -d' ' -f2)
        echo "$m,$p,$b,$r,$l" | tee -a $OUT/before_after.csv
      done
    done
  done
done
echo "== GPU suite: runtime, kernels, engine, SqueezeNet and GoogLeNet x every policy x mode x precision"
timeout ${SUITE_S:-330} build/bin/ios_gpu_tests --gtest_filter="${SUITE:-Gpu*:JitCache*:ConvTuning*:TuningBudget*:PrefetchSuffix*:*GpuMatchesReference*/squeezenet*:*GpuMatchesReference*/googlenet*}" > $OUT/gpu_suite.log 2>&1
echo "suite rc=$?"; grep -E "^\[  (PASSED|FAILED) |^\[==========\]|FAILED  \]" $OUT/gpu_suite.log | tail -15
xz -k $OUT/gpu_suite.log
