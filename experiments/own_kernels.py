#!/usr/bin/env python3
"""Our kernels against cuDNN's alone, end to end, beside PyTorch: torchvision models exported to ONNX (as
onnx_torchvision.py makes them), each run by `ios run` with `--own-kernels on` and `--own-kernels off`
(IOS-Both, analytic-model schedule, output checked against the CPU reference), and by PyTorch's CUDA graph
and torch.compile (reduce-overhead) at the same precision (fp32: TF32 off, NCHW; fp16: channels-last).
Batch 1. The two `ios run` settings alternate for --rounds rounds (their kernels tuned once, in the first
round, into one kernel cache: the settings' cache keys differ); each latency is the median over its rounds
of `ios run`'s median. Writes <out>/own_kernels.csv and .json as it goes, plus each run's `ios` report of
which convolutions ran on our kernels.

Needs: PyTorch, torchvision, onnx, numpy, a CUDA GPU, the `ios` binary (--ios).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess

from compare_pytorch import gpu_environment, make_runner, timed
from onnx_torchvision import build_model


def ios_run(args, onnx, x, precision, own, out_json):
    cmd = [args.ios, "run", "--onnx", onnx, "--opt", "ios-both", "--cost-model", "analytic", "--precision",
           precision, "--own-kernels", own, "--input", x, "--check", "--quiet", "--iters", "200", "--json", out_json]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print(" ".join(cmd), "\n", p.stdout[-800:], p.stderr[-800:], flush=True)
        return None
    return json.load(open(out_json))


def own_count(report):
    """How many convolutions ran on our kernels (of how many)."""
    k = report.get("kernels", {})
    return f"{k.get('own_kernels')}/{k.get('convolutions')}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ios", default="build/bin/ios")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pytorch", default="graph,compile", help="PyTorch modes timed beside us (empty: none)")
    args = ap.parse_args()
    import numpy as np
    import torch
    import torchvision
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    rows, runs = [], {}
    modes = [m for m in args.pytorch.split(",") if m]
    header = ["model", "precision", "ours_ms", "cudnn_only_ms", "speedup", "own_convs", "rel_l2"] + \
             [f"pytorch_{m}_ms" for m in modes]

    def write():
        with open(os.path.join(args.out, "own_kernels.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        json.dump({"environment": gpu_environment(torch), "runs": runs}, open(os.path.join(args.out, "own_kernels.json"),
                                                                             "w"), indent=1)

    for name in args.models.split(","):
        model, x = build_model(name, torch, torchvision)
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        onnx = os.path.join(folder, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x,), onnx, opset_version=17, dynamo=False)
        xpath = os.path.join(folder, "x.npy")
        np.save(xpath, x.numpy().astype(np.float32))
        for precision in args.precisions.split(","):
            times = {"on": [], "off": []}
            last = {}
            for r in range(args.rounds):
                for own in ("on", "off") if r % 2 == 0 else ("off", "on"):
                    rep = ios_run(args, onnx, xpath, precision, own, os.path.join(folder, f"{precision}_{own}.json"))
                    if rep:
                        times[own].append(rep["latency_ms"]["median"])
                        last[own] = rep
            runs[f"{name}/{precision}"] = times
            on = statistics.median(times["on"]) if times["on"] else None
            off = statistics.median(times["off"]) if times["off"] else None
            dtype = torch.float16 if precision == "fp16" else torch.float32
            fmt = torch.channels_last if precision == "fp16" else torch.contiguous_format
            m = model.to(dtype=dtype).cuda().to(memory_format=fmt)
            xc = x.to(dtype=dtype).cuda().to(memory_format=fmt)
            theirs = []
            with torch.inference_mode():
                for mode in modes:
                    torch._dynamo.reset()
                    fn, _ = make_runner(m, xc, mode, torch)
                    theirs.append(round(timed(fn, 50, 100, 5, torch), 4))
                    del fn
            model = model.float().cpu()
            check = last.get("on", {}).get("check", {}).get("relative_l2_error")
            rows.append([name, precision, on, off, round(off / on, 3) if on and off else None,
                         own_count(last.get("on", {})), check] + theirs)
            print(rows[-1], flush=True)
            write()


if __name__ == "__main__":
    main()
