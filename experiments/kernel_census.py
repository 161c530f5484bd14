#!/usr/bin/env python3
"""Which kernels a network runs, ours beside PyTorch's, per inference.

Ours: Chrome traces written by `ios run --trace FILE` (CUPTI; kernel names in args.kernel, one row
per kernel of each profiled inference). PyTorch: the JSON `compare_pytorch.py --census FILE` writes.
Kernels are grouped into families by name (convolution engines by kind, layout transposes, GEMMs,
pooling, element-wise), so "62 legacy implicit_convolve_sgemm against 89 xmma implicit GEMMs" shows
at a glance. Prints one markdown table per run.

  kernel_census.py --ours 'inception_v3 fp16 IOS-Both=trace.json' ... --pytorch census.json
"""
import argparse
import json
import re
import sys
from collections import defaultdict

FAMILIES = [  # first match wins
    ("transpose (layout change)", r"nchwToNhwc|nhwcToNchw|transpose|permute|convertTensor"),
    ("cuDNN channel-slice copy (nhwcSliceC)", r"SliceC"),
    ("batch norm (PyTorch; folded into convs by us)", r"bn_fw|batch_norm"),
    ("conv: legacy implicit_convolve_sgemm", r"implicit_convolve"),
    ("conv: winograd", r"winograd"),
    ("conv: fft", r"fft"),
    ("conv: implicit GEMM, tensor cores (xmma/cutlass, hmma/tf32)", r"(xmma|cutlass|sm\d+_).*(fprop|conv|implicit).*(tf32|f16|bf16|h1688|h16816|hmma|s16816|s1688)|(tf32|f16|bf16|hmma).*(fprop|implicit)"),
    ("conv: implicit GEMM, fp32 FMA (xmma/cutlass)", r"(xmma|cutlass|sm\d+_).*(fprop|conv|implicit)"),
    ("conv: other cuDNN", r"conv|fprop|cudnn|depthwise|engine_|generic"),
    ("gemm (1x1 convs run as GEMMs by cuDNN; linear layers)", r"gemm|gemv|cublas"),
    ("pooling", r"pool"),
    ("element-wise / gather / other", r".*"),
]


def family(name):
    for label, pattern in FAMILIES:
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return FAMILIES[-1][0]


def ours_kernels(path):
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    inferences = max(1, len({e["args"].get("inference", 0) for e in events}))
    kernels = defaultdict(lambda: {"count": 0.0, "us": 0.0})
    for e in events:
        k = kernels[e["args"]["kernel"]]
        k["count"] += 1 / inferences
        k["us"] += e["dur"] / inferences
    return [{"name": n, **v} for n, v in kernels.items()]


def table(title, kernels, top):
    fam = defaultdict(lambda: {"count": 0.0, "us": 0.0})
    for k in kernels:
        f = fam[family(k["name"])]
        f["count"] += k["count"]
        f["us"] += k["us"]
    total = sum(k["us"] for k in kernels)
    lines = [f"#### {title}: {sum(k['count'] for k in kernels):.0f} kernels, {total:.0f} us of kernel time", "",
             "| family | kernels | us | share |", "|---|---:|---:|---:|"]
    for label, v in sorted(fam.items(), key=lambda kv: -kv[1]["us"]):
        lines.append(f"| {label} | {v['count']:.0f} | {v['us']:.1f} | {100 * v['us'] / max(total, 1e-9):.0f}% |")
    lines += ["", f"Top {top} kernels:", ""]
    for k in sorted(kernels, key=lambda k: -k["us"])[:top]:
        lines.append(f"- {k['count']:.0f} x `{k['name'][:110]}`: {k['us']:.1f} us")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", nargs="*", default=[], help="'LABEL=trace.json' from `ios run --trace`")
    ap.add_argument("--pytorch", help="census JSON from compare_pytorch.py --census")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    for spec in args.ours:
        label, sep, path = spec.partition("=")
        if not sep:
            sys.exit(f"--ours: expected LABEL=trace.json, got '{spec}'")
        print(table("ours: " + label, ours_kernels(path), args.top))
    if args.pytorch:
        with open(args.pytorch) as f:
            for run in json.load(f)["runs"]:
                print(table(f"PyTorch {run['mode']}: {run['model']} {run['precision']}", run["kernels"], args.top))


if __name__ == "__main__":
    main()
