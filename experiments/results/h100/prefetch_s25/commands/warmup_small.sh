set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/warmup_small; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
for p in fp32 tf32; do for r in 1 2; do for w in 1 0; do
  timeout 120 build/bin/exp_latency --model inception_v3,googlenet,squeezenet --opt ios-both --exec staged,dataflow --stage-timing $w/2/2-4/0.05 --cost-model measured --precision $p --rounds 5 --out-dir $o/${p}_w${w}_r$r > $o/${p}_w${w}_r$r.log 2>&1
  grep -E "^Model" $o/${p}_w${w}_r$r.log | sed -E "s/.*Model: ([a-z_0-9]+).*\[(.*)\].*cost: ([0-9.]+) sec.*Latency: (.*)/$p w$w r$r \1 \2 search \3 s \4/"
done; done; done
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT warmup_small
