set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/inprocess2; mkdir -p $o; export IOS_KERNEL_CACHE=$o/kc.json
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
a="--model inception_v3 --precision tf32"
fid() { echo "$1: $(grep -o 'Optimization cost: [0-9.]* sec' $2) | $(grep -o '[0-9]* stages timed' $2 | head -1) | $(grep -E '^Fidelity:' $2 | cut -c1-200)"; }
lat() { echo "$1: $(grep -E '^Latency' $2 | cut -c1-90)"; }
timeout 100 build/bin/ios optimize $a --opt ios-both --cost-model measured --max-part-size 50 --stage-cache $o/sc.json --out $o/s1.json > $o/1_search.log 2>&1; fid "1 search, timing stages" $o/1_search.log
timeout 60 build/bin/ios run $a --schedule $o/s1.json --iters 1000 > $o/2_run.log 2>&1; lat "2 its schedule, fresh ios run" $o/2_run.log
timeout 100 build/bin/ios optimize $a --opt ios-both --cost-model measured --max-part-size 50 --stage-cache $o/sc.json --out $o/s3.json > $o/3_research.log 2>&1; fid "3 cached re-search" $o/3_research.log
cmp -s $o/s1.json $o/s3.json && echo "   same schedule file" || (python3 -c "import json,sys;a=json.load(open('$o/s1.json'));b=json.load(open('$o/s3.json'));print('   same stages:',a['blocks']==b['blocks'])")
timeout 60 build/bin/ios run $a --schedule $o/s1.json --iters 1000 > $o/4_run.log 2>&1; lat "4 its schedule, fresh ios run" $o/4_run.log
timeout 100 build/bin/ios run $a --opt ios-both --cost-model measured --max-part-size 50 --stage-cache $o/sc.json --iters 1000 > $o/5_run_research.log 2>&1; lat "5 ios run, cached re-search then run" $o/5_run_research.log
timeout 100 build/bin/ios optimize $a --opt ios-both --cost-model measured --max-part-size 50 --stage-cache $o/sc.json --out $o/s6.json > $o/6_research.log 2>&1; fid "6 cached re-search" $o/6_research.log
rm -f $o/kc.json; xz -9 $o/sc.json
tar czf $OUT/r.tar.gz -C $OUT inprocess2
