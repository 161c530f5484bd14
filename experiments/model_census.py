#!/usr/bin/env python3
"""Ours beside PyTorch per model and batch size, and where the time goes.

For each torchvision model (or timm:NAME) and batch size: exports the model to ONNX (opset 17, seeded random
weights, as onnx_torchvision.py makes them), runs `ios run` (IOS-Both; the cost model of `--cost-model`,
by default `ios`'s own default: the measured search; output checked against the CPU reference) and times
PyTorch's CUDA graph and torch.compile (reduce-overhead) at the same precision and batch (fp16/bf16:
channels-last; fp32: TF32 off; cudnn.benchmark on). Latencies are medians of CUDA-event-timed runs.
Writes <out>/versus_pytorch.csv as it goes. With --census it also traces one inference of ours (CUPTI) and
profiles torch.compile's kernels, prints both as kernel_census.py tables and writes <out>/census.json
(compare_pytorch.py's census format) and the traces.

  model_census.py --out OUT --models efficientnet_b0,resnet50 [--precision fp16] [--batches 1,16,64]
                  [--census] [--ios-args '--own-kernels off']

Needs: PyTorch, torchvision, onnx, numpy, a CUDA GPU, the `ios` binary (--ios).
"""
import argparse
import csv
import json
import os
import shlex
import subprocess

from compare_pytorch import gpu_environment, kernel_census, make_runner, timed
from kernel_census import ours_kernels, table
from onnx_torchvision import build_model


def run_ours(args, onnx, xpath, batch, report, trace):
    cmd = [args.ios, "run", "--onnx", onnx, "--opt", "ios-both", "--cost-model", args.cost_model, "--precision",
           args.precision, "--batch", str(batch), "--input", xpath, "--check", "--quiet", "--iters", "200", "--json",
           report] + (["--trace", trace] if trace else []) + shlex.split(args.ios_args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print(" ".join(cmd), "\n", p.stdout[-1500:], p.stderr[-1500:], flush=True)
        return None
    return json.load(open(report))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ios", default="../build/bin/ios")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--precision", default="fp16", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--batches", default="1")
    ap.add_argument("--cost-model", default="auto", help="`ios run --cost-model`: auto (measured), analytic")
    ap.add_argument("--ios-args", default="", help="extra `ios run` flags, e.g. to turn a fusion off")
    ap.add_argument("--census", action="store_true", help="also trace and compare the kernels of both")
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    import numpy as np
    import torch
    import torchvision
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    census = {"environment": gpu_environment(torch), "runs": []}
    header = ["model", "precision", "batch", "ours_ms", "pytorch_graph_ms", "torch_compile_ms", "speedup_vs_compile",
              "ours_images_per_s", "compile_images_per_s", "rel_l2"]
    rows = []
    for name in args.models.split(","):
        model, x1 = build_model(name, torch, torchvision)
        stem = name.replace(":", "_")
        onnx = os.path.join(args.out, stem + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x1,), onnx, opset_version=17, dynamo=False)
        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.precision]
        fmt = torch.contiguous_format if args.precision == "fp32" else torch.channels_last
        m = model.to(dtype=dtype).cuda().to(memory_format=fmt)
        for batch in [int(b) for b in args.batches.split(",")]:
            x = x1.repeat(batch, 1, 1, 1)
            tag = f"{stem}_{args.precision}_b{batch}"
            xpath = os.path.join(args.out, f"x_{stem}_b{batch}.npy")
            np.save(xpath, x.numpy().astype(np.float32))
            trace = os.path.join(args.out, tag + ".trace.json") if args.census else None
            ours = run_ours(args, onnx, xpath, batch, os.path.join(args.out, tag + ".json"), trace)
            os.remove(xpath)
            xc = x.to(dtype=dtype).cuda().to(memory_format=fmt)
            theirs = {}
            with torch.inference_mode():
                for mode in ("graph", "compile"):
                    torch._dynamo.reset()
                    fn, _ = make_runner(m, xc, mode, torch)
                    theirs[mode] = timed(fn, 50, 100, 5, torch)
                    if mode == "compile" and args.census:
                        census["runs"].append({"model": name, "precision": args.precision, "batch": batch,
                                               "mode": mode, "ms": theirs[mode], "kernels": kernel_census(fn, torch)})
                    del fn
            ours_ms = ours["latency_ms"]["median"] if ours else None
            check = ours.get("check", {}).get("relative_l2_error") if ours else None
            rows.append([name, args.precision, batch, ours_ms, round(theirs["graph"], 4), round(theirs["compile"], 4),
                         round(theirs["compile"] / ours_ms, 3) if ours_ms else None,
                         round(1000 * batch / ours_ms, 1) if ours_ms else None,
                         round(1000 * batch / theirs["compile"], 1), check])
            print(dict(zip(header, rows[-1])), flush=True)
            with open(os.path.join(args.out, "versus_pytorch.csv"), "w", newline="") as f:
                csv.writer(f).writerows([header] + rows)
            if args.census:
                json.dump(census, open(os.path.join(args.out, "census.json"), "w"), indent=1)
                if ours:
                    print(table(f"ours: {name} batch {batch}", ours_kernels(trace), args.top), flush=True)
                print(table(f"torch.compile: {name} batch {batch}", census["runs"][-1]["kernels"], args.top), flush=True)
        os.remove(onnx)
        del m
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
