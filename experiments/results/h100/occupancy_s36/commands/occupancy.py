# Session 36: per CUPTI trace (ios run --trace), the kernels' summed time per inference and the same time
# weighted by the share of the H100's block slots each kernel's grid fills (blocks / (132 x blocks per SM,
# from threads, registers and shared memory)). Usage: python3 occupancy.py TRACE.json.xz...
import json,lzma,sys,collections,math
def bps(block, regs, smem):
    threads = block[0]*block[1]*block[2]
    warps = math.ceil(threads/32)
    by_threads = 2048 // max(threads,1)
    regs_per_warp = math.ceil(max(regs,1)*32/256)*256
    by_regs = 65536 // (regs_per_warp*warps) if regs else 32
    by_smem = 233472 // (smem + 1024) if smem else 32
    return max(0, min(32, by_threads, by_regs, by_smem))
def analyse(path):
    d=json.load(lzma.open(path))
    ev=[e for e in d['traceEvents'] if e.get('ph')=='X']
    inf=collections.defaultdict(float); work=collections.defaultdict(float)
    for e in ev:
        a=e['args']; g=a['grid']; blocks=g[0]*g[1]*g[2]
        b=bps(a['block'],a['registers'],a['shared_memory'])
        f=min(1.0, blocks/(132*b)) if b else 1.0
        inf[a['inference']]+=e['dur']; work[a['inference']]+=e['dur']*f
    n=len(inf)
    return sum(inf.values())/n, sum(work.values())/n
for f in sys.argv[1:]:
    s,w=analyse(f); print('%-40s kernels %.1f us, occupancy-weighted %.1f us'%(f.split('/')[-1],s,w))
