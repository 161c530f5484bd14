#!/usr/bin/env python3
"""Session 26, on this machine from the files ab.sh brought back (run in the ab/ folder):
  1. per op of the sequential schedule, its single-op stage figure in each search's stage cache
     (exp_replay --schedule seq.json, base binary for base_*, new for new_*), split by whether the
     network writes the op's output into a concatenation: seq_ops.txt;
  2. the kernels of every CUPTI timeline under experiments/results/h100 by kind: cuDNN's nhwcSliceC
     copies against the rest: slice_kernels.txt."""
import collections, glob, json, lzma, re, sys


def figures(path):
    out = []
    for line in open(path):
        m = re.match(r"stage (\d+) \| \w+ \| \d+ groups, \d+ ops \| ([\d.]+) ms", line)
        if m:
            out.append(float(m.group(2)) * 1000)
    return out


def seq_ops(out):
    runs = {k: figures(f"seq_{k}.txt") for k in ["base1", "base2", "new1", "new2"]}
    d = json.load(open("seq.json"))
    nodes, order = {}, []
    for blk in d["blocks"]:
        for n in blk["inner_nodes"] + [blk["exit_node"]]:
            nodes[n["name"]] = n
        order += [st[0][0] for st in blk["stages"]]
    concatenated = set()
    for n in nodes.values():
        if n["type"] == "identity" and len(n["inputs"]) >= 2:
            concatenated |= {t[0][0] for t in n["inputs"] if len(t) == 1}
    for into in (True, False):
        ops = [i for i, name in enumerate(order) if (name in concatenated) == into]
        sums = " ".join(f"{k} {sum(runs[k][i] for i in ops):.1f}" for k in runs)
        print(f"{'written into a concatenation' if into else 'other ops'}: {len(ops)} ops, sum of figures (us): {sums}", file=out)
    print("\nop  kind     shape            base1  base2   new1   new2  into a concatenation", file=out)
    for i, name in enumerate(order):
        n = nodes[name]
        print(f"{name:>3} {n['type']:<8} {str(n['output_shape']):<16} " +
              " ".join(f"{runs[k][i]:6.1f}" for k in runs) + f"  {name in concatenated}", file=out)


def slice_kernels(out, root):
    print("timeline | kernels | nhwcSliceC kernels | their us | all kernels' us", file=out)
    for f in sorted(glob.glob(root + "/**/*trace*.json*", recursive=True)):
        try:
            d = json.load(lzma.open(f) if f.endswith(".xz") else open(f))
        except (OSError, ValueError, lzma.LZMAError):
            continue
        events = d["traceEvents"] if isinstance(d, dict) else d
        ks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
        if not ks:
            continue
        sl = [e for e in ks if "nhwcSliceC" in e.get("args", {}).get("kernel", "")]
        print(f"{f[len(root) + 1:]} | {len(ks)} | {len(sl)} | {sum(e['dur'] for e in sl):.1f} | "
              f"{sum(e['dur'] for e in ks):.1f}", file=out)


if __name__ == "__main__":
    with open("seq_ops.txt", "w") as out:
        seq_ops(out)
    with open("slice_kernels.txt", "w") as out:
        slice_kernels(out, sys.argv[1] if len(sys.argv) > 1 else "../..")
