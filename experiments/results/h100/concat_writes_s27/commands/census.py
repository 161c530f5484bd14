#!/usr/bin/env python3
"""Kernel census of one inference of an `ios run --trace` timeline: cuDNN's slice copies, layout
transposes and GEMMs, counted and summed (us)."""
import collections
import json
import sys


def kind(kernel):
    if "Slice" in kernel:
        return "slice"
    if "nchwToNhwc" in kernel or "nhwcToNchw" in kernel:
        return "transpose"
    if "ffma" in kernel:
        return "ffma-gemm"
    if "xmma" in kernel or "gemm" in kernel:
        return "tensor-core-gemm"
    return "other"


events = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
count, us = collections.Counter(), collections.Counter()
for e in kernels:
    k = kind(e["args"]["kernel"])  # the event's "name" is the op's id
    count[k] += 1
    us[k] += e["dur"]
print(sys.argv[1].split("/")[-1], "kernels", len(kernels), "us", round(sum(us.values()), 1),
      {k: (count[k], round(us[k], 1)) for k in sorted(count)})
