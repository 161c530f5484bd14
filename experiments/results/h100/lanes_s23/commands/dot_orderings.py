#!/usr/bin/env python3
"""Which kernel pairs two CUDA graphs order differently: dot_orderings.py BASE.dot OTHER.dot [...]
(`ios run --graph-dot` files). Nodes are matched by creation order; with the same kernel sequence, prints
the ordered pairs (a, b: b reachable from a) in OTHER and not in BASE, and the reverse."""
import re,sys
def parse(f):
    t=open(f).read()
    nodes={}
    for blk in re.split(r'\n(?="graph_1_node_\d+"\[)',t):
        m=re.match(r'"(graph_1_node_\d+)"\[.*?ID \| (\d+) \(topoId: (\d+)\) \| (.*?)\\<\\<\\<(.*?)\\>\\>\\>',blk,re.S)
        if m: nodes[m.group(1)]=(int(m.group(2)),m.group(4)+'<<<'+m.group(5)+'>>>')
    edges=[(a,b) for a,b in re.findall(r'"(graph_1_node_\d+)" -> "(graph_1_node_\d+)"',t)]
    return nodes,edges
def closure(nodes,edges):
    ids={k:v[0] for k,v in nodes.items()}
    n=len(nodes); preds=[set() for _ in range(n)]
    for a,b in edges: preds[ids[b]].add(ids[a])
    # topo order by id assumed? compute via DFS memo
    anc=[None]*n
    import sys; sys.setrecursionlimit(10000)
    def A(i):
        if anc[i] is None:
            s=set()
            for p in preds[i]: s|={p}|A(p)
            anc[i]=s
        return anc[i]
    return [A(i) for i in range(n)]
res={}
for f in sys.argv[1:]:
    n,e=parse(f)
    seq=[v[1] for v in sorted(n.values())]
    c=closure(n,e)
    res[f]=(seq,c,e)
    print(f,len(n),'edges',len(e),'ancestor pairs',sum(len(x) for x in c))
base=sys.argv[1]
for f in sys.argv[2:]:
    print(f,'same kernel sequence:',res[f][0]==res[base][0])
    if res[f][0]==res[base][0]:
        c0,c1=res[base][1],res[f][1]
        extra=[(a,i) for i in range(len(c0)) for a in c1[i]-c0[i]]
        missing=[(a,i) for i in range(len(c0)) for a in c0[i]-c1[i]]
        print('  ordered here not in base:',len(extra),extra[:10]);print('  ordered in base not here:',len(missing),missing[:10])
