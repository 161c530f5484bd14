# The critical path of a network's dataflow graph weighed two ways, from CUPTI traces of the same
# kernels: each launch's kernel time alone (the sequential schedule's trace) and inside the dataflow graph
# (its own trace), means over the traced inferences. Launches are named by their ops ("78+81": merged).
# Usage: python3 critical_path.py SCHEDULE.json[.xz] SEQUENTIAL_TRACE.json.xz DATAFLOW_TRACE.json.xz
import collections, json, lzma, sys

def load(path):
    return json.load(lzma.open(path) if path.endswith('.xz') else open(path))

def op_times(path):
    ev = [e for e in load(path)['traceEvents'] if e.get('ph') == 'X']
    runs = len({e['args']['inference'] for e in ev})
    t = collections.defaultdict(float)
    for e in ev:
        ops = e['name'].split('+')
        for op in ops:  # a merged launch's time is shared out equally: it runs once for all of them
            t[op] += e['dur'] / len(ops) / runs
    return t

def preds(schedule):
    p = {}
    for b in load(schedule)['blocks']:
        for n in [b['enter_node'], b['exit_node']] + b['inner_nodes']:
            p[n['name']] = {term[0] for group in n.get('inputs', []) for term in group}
    return p

def longest(p, w):
    memo = {}
    def f(n):
        if n not in memo:
            memo[n] = w.get(n, 0.0) + max((f(q) for q in p[n]), default=0.0)
        return memo[n]
    return max(f(n) for n in p)

schedule, seq, df = sys.argv[1:4]
p = preds(schedule)
alone, inside = op_times(seq), op_times(df)
print('critical path of the kernels alone %.1f us, of the same kernels inside the dataflow graph %.1f us' %
      (longest(p, alone), longest(p, inside)))
