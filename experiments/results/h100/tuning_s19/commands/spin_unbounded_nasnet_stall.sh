set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build/bin/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
o=$OUT/c7; mkdir -p $o
r=experiments/results/h100/search_s18
timeout 70 build/bin/ios run --model nasnet --schedule $r/final/nasnet.json --kernel-cache $o/kc.json --verbose --iters 100 2>&1 | python3 -u -c "
import sys,time
t0=time.time()
for l in sys.stdin: sys.stdout.write(f'{time.time()-t0:8.3f} {l}')" > $o/nasnet_ts.log
python3 - $o/nasnet_ts.log <<'PY'
import sys,re
prev=0;rows=[]
for l in open(sys.argv[1]):
    t=float(l[:8]); rows.append((t-prev,l[9:].strip()[:260])); prev=t
for d,l in sorted(rows,reverse=True)[:15]: print(f"{d:7.3f} {l}")
print(len(rows),'lines')
PY
tar czf $OUT/r.tar.gz -C $OUT c7
