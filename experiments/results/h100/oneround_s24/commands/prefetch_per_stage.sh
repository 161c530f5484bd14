set -uo pipefail
tar xJf build/carry.tar.xz -C build
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/prefetch2; mkdir -p $o
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee $o/gpu.txt
export IOS_KERNEL_CACHE=$o/kc.json
src="--randwire-graphs build/randwire_graphs"
timeout 60 build/bin/ios optimize --model inception_v3 --opt sequential --cost-model analytic --quiet --out experiments/.sched/inception_v3_seq.json > $o/seq_opt.log 2>&1
run() { # name net schedule extra...
  local n=$1 net=$2 sch=$3; shift 3
  for r in 1 2; do for p in 0 1 2; do
    IOS_PREFETCH=$p timeout 60 build/bin/ios run --model $net $src --schedule experiments/.sched/$sch.json --iters 1000 "$@" > $o/${n}_p${p}_$r.log 2>&1
    echo "$n prefetch $p round $r: $(grep -E '^Latency' $o/${n}_p${p}_$r.log | cut -c1-90)"
  done; done
}
IOS_PREFETCH=2 timeout 100 build/bin/ios run --model inception_v3 --schedule experiments/.sched/inception_v3.json --iters 100 --check > $o/check_inception.log 2>&1; grep -i "check:" $o/check_inception.log
IOS_PREFETCH=2 timeout 100 build/bin/ios run --model inception_v3 --schedule experiments/.sched/inception_v3.json --iters 100 --exec dataflow --check > $o/check_inception_df.log 2>&1; grep -i "check:" $o/check_inception_df.log
run incep_seq inception_v3 inception_v3_seq
run incep inception_v3 inception_v3
run incep_df inception_v3 inception_v3 --exec dataflow
run incep_tf32 inception_v3 inception_v3_tf32 --precision tf32
run nasnet nasnet nasnet
run randwire randwire randwire
rm -f $o/kc.json
tar czf $OUT/r.tar.gz -C $OUT prefetch2
