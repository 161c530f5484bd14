#!/usr/bin/env python3
"""IOS-Both at fp16 beside PyTorch's CUDA graph and torch.compile (reduce-overhead) at fp16, batch 1, on
torchvision models exported to ONNX (TorchScript exporter, opset 17; weights as onnx_torchvision.py makes
them). Per model, one process for PyTorch, `ios run --precision fp16` for ours (analytic-model IOS-Both
schedule, output checked against the CPU reference), PyTorch in fp16 channels-last with cudnn.benchmark.
Latencies are medians of CUDA-event-timed replays. Writes <out>/torchvision_fp16.csv as it goes.

Needs: PyTorch, torchvision, numpy, a CUDA GPU, the `ios` binary (--ios).
"""
import argparse
import csv
import json
import os
import subprocess
import sys

from compare_pytorch import make_runner, timed
from onnx_torchvision import build_model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ios", default="build/bin/ios")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    import numpy as np
    import torch
    import torchvision
    torch.backends.cudnn.benchmark = True
    os.makedirs(args.out, exist_ok=True)
    table = os.path.join(args.out, "torchvision_fp16.csv")
    with open(table, "w", newline="") as f:
        csv.writer(f).writerow(["model", "ios_both_fp16_ms", "check_rel_l2", "pytorch_graph_fp16_ms",
                                "torch_compile_fp16_ms", "compile_s"])
    for name in args.models.split(","):
        model, x = build_model(name, torch, torchvision)
        path = os.path.join(args.out, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False)
        np.save(os.path.join(args.out, "x.npy"), x.numpy().astype(np.float32))
        rj = os.path.join(args.out, "run.json")
        p = subprocess.run([args.ios, "run", "--onnx", path, "--opt", "ios-both", "--cost-model", "analytic",
                            "--precision", "fp16", "--input", os.path.join(args.out, "x.npy"), "--check", "--quiet",
                            "--iters", "200", "--json", rj], capture_output=True, text=True, timeout=300)
        ours, err = (None, None)
        if p.returncode == 0:
            r = json.load(open(rj))
            ours, err = r["latency_ms"]["median"], r["check"]["relative_l2_error"]
        else:
            print(p.stdout[-500:], p.stderr[-500:], flush=True)
        m = model.half().cuda().to(memory_format=torch.channels_last)
        xc = x.half().cuda().to(memory_format=torch.channels_last)
        with torch.inference_mode():
            fn, _ = make_runner(m, xc, "graph", torch)
            graph_ms = timed(fn, 50, 100, 5, torch)
            del fn
            torch._dynamo.reset()
            fn, compile_s = make_runner(m, xc, "compile", torch)
            compile_ms = timed(fn, 50, 100, 5, torch)
            del fn
        row = [name, ours, err, round(graph_ms, 4), round(compile_ms, 4), round(compile_s, 1)]
        print(row, flush=True)
        with open(table, "a", newline="") as f:
            csv.writer(f).writerow(row)
        os.remove(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
