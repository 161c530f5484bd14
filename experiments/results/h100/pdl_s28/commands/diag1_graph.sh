#!/usr/bin/env bash
# Session 28 diagnosis 1 (diagnosis/1_graph/): SqueezeNet tf32 graph-rtc reproduced; the captured graph dumped
# (--graph-dot: 40 kernel nodes, nothing else); CUDA_MODULE_LOADING=EAGER; an eager run before capture (build/bin/ios_eager,
# main 2b2ec6b with IOS_EAGER_BEFORE_CAPTURE issuing the plan once on streams before capturing). main 2b2ec6b binaries.
set -x
O=$OUT
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > $O/gpu.txt
D=experiments/results/h100/concat_writes_s27/commands/squeezenet_debug.sh
timeout 200 bash $D $O/a --conv-engine graph-rtc 2>&1 | tee $O/a.txt
b=build/bin/ios
args="run --model squeezenet --opt sequential --precision tf32 --cost-model analytic --check --verbose --kernel-cache $O/a/kc.json --iters 20 --conv-engine graph-rtc"
timeout 40 $b $args --graph-dot $O/g.dot > $O/dot.log 2>&1; grep -E '^Check' $O/dot.log
grep -oE '(KERNEL|MEMCPY|MEMSET|HOST|EMPTY|EVENT_RECORD|WAIT_EVENT|MEM_ALLOC|MEM_FREE|CONDITIONAL)' $O/g.dot | sort | uniq -c | tee $O/dot_nodes.txt
CUDA_MODULE_LOADING=EAGER timeout 40 $b $args > $O/eagerload.log 2>&1; echo "eager module load: $(grep -E '^Check|^error' $O/eagerload.log)" | tee -a $O/a.txt
IOS_EAGER_BEFORE_CAPTURE=1 timeout 40 build/bin/ios_eager $args > $O/eagerrun.log 2>&1; echo "eager run before capture: $(grep -E '^Check|^error' $O/eagerrun.log)" | tee -a $O/a.txt
timeout 150 compute-sanitizer --tool memcheck $b $args --iters 2 > $O/memcheck.log 2>&1; tail -5 $O/memcheck.log
timeout 150 compute-sanitizer --tool initcheck $b $args --iters 2 > $O/initcheck.log 2>&1; tail -5 $O/initcheck.log
xz $O/g.dot
