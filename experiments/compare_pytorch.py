#!/usr/bin/env python3
"""PyTorch beside our runtime on the topologies that match (GoogLeNet, Inception V3), batch 1.

Runs each torchvision model in eager mode, as a captured CUDA graph and with
torch.compile(mode="reduce-overhead"), in fp32 (TF32 off) and tf32, random weights, eval mode,
cudnn.benchmark on. Each figure is the median of --blocks blocks of --iters CUDA-event-timed
iterations after warm-up. Writes pytorch.csv / pytorch.json into --out-dir; with --ours (our
exp_latency CSV) it also prints our policies beside PyTorch's best at the same precision.

Topology notes: torchvision's GoogLeNet is ours with BatchNorm folded (we fold, PyTorch runs BN
kernels). torchvision's Inception V3 ends with a 1000-way fc that IOS's (and our) Inception V3 omits
(a 2048x1000 GEMV, a few microseconds); aux logits are off in both.
"""
import argparse
import copy
import csv
import json
import os
import statistics
import subprocess
import sys
import time


def timed(fn, warmup, iters, blocks, torch):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    medians = []
    for _ in range(blocks):
        times = []
        for _ in range(iters):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        medians.append(statistics.median(times))
    return statistics.median(medians)


def kernel_census(fn, torch, inferences=10):
    """GPU kernels of `inferences` calls of fn, as [{name, count, us}] per inference."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(inferences):
            fn()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA or "memcpy" in e.name.lower() or "memset" in e.name.lower():
            continue
        k = kernels.setdefault(e.name, {"name": e.name, "count": 0, "us": 0.0})
        k["count"] += 1
        k["us"] += e.device_time
    for k in kernels.values():
        k["count"] /= inferences
        k["us"] /= inferences
    return sorted(kernels.values(), key=lambda k: -k["us"])


def make_runner(model, x, mode, torch):
    """(a function running one inference, compile seconds) for eager, graph (a captured CUDA graph),
    compile (torch.compile reduce-overhead) or max-autotune. Call inside torch.inference_mode()."""
    if mode == "eager":
        return (lambda: model(x)), 0.0
    if mode == "graph":
        static_x = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(static_x)
        return graph.replay, 0.0
    if mode in ("compile", "max-autotune"):
        compiled = torch.compile(model, mode="reduce-overhead" if mode == "compile" else "max-autotune")
        t0 = time.time()
        for _ in range(3):
            compiled(x)
        torch.cuda.synchronize()
        return (lambda: compiled(x)), time.time() - t0
    sys.exit(f"unknown PyTorch mode '{mode}' (eager, graph, compile, max-autotune)")


def gpu_environment(torch):
    """GPU (nvidia-smi: name, clocks, driver) and library versions, recorded beside every figure."""
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return {"nvidia_smi": smi, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "cuda": torch.version.cuda, "command": " ".join(sys.argv), "clocks_locked": False}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="googlenet,inception_v3")
    ap.add_argument("--modes", default="eager,graph,compile",
                    help="eager, graph (CUDA graph), compile (reduce-overhead), max-autotune (minutes per model)")
    ap.add_argument("--precisions", default="fp32,tf32,fp16,bf16",
                    help="fp32 (TF32 off), tf32, fp16 / bf16 (channels_last, as deployed)")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--out-dir", default="experiments/results/latest")
    ap.add_argument("--ours", help="our exp_latency CSV, printed beside PyTorch")
    ap.add_argument("--census", help="also write the kernels each model/precision/mode runs (torch.profiler, "
                    "per inference) to this JSON file, for kernel_census.py")
    args = ap.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"compare_pytorch.py needs PyTorch and torchvision: {e}")
    if not torch.cuda.is_available():
        sys.exit("compare_pytorch.py needs a CUDA GPU")
    torch.backends.cudnn.benchmark = True
    inputs = {"googlenet": 224, "inception_v3": 299}
    rows, census = [], []
    for name in args.models.split(","):
        if name not in inputs:
            sys.exit(f"--models: unknown model '{name}' (googlenet, inception_v3)")
        kwargs = {"weights": None, "aux_logits": False, "init_weights": True}
        base = getattr(torchvision.models, name)(**kwargs).cuda().eval()
        for precision in args.precisions.split(","):
            if precision not in ("fp32", "tf32", "fp16", "bf16"):
                sys.exit(f"--precisions: unknown precision '{precision}'")
            tf32 = precision == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
            fmt = torch.channels_last if dtype != torch.float32 else torch.contiguous_format
            model = copy.deepcopy(base).to(dtype=dtype, memory_format=fmt)
            x = torch.randn(1, 3, inputs[name], inputs[name], device="cuda", dtype=dtype).to(memory_format=fmt)
            for mode in args.modes.split(","):
                torch._dynamo.reset()
                with torch.inference_mode():
                    fn, compile_s = make_runner(model, x, mode, torch)
                    ms = timed(fn, args.warmup, args.iters, args.blocks, torch)
                    if args.census:
                        census.append({"model": name, "precision": precision, "mode": mode,
                                       "kernels": kernel_census(fn, torch)})
                rows.append({"model": name, "framework": "pytorch " + torch.__version__, "mode": mode,
                             "precision": precision, "batch": 1, "latency_ms": round(ms, 4),
                             "compile_s": round(compile_s, 1)})
                print(f"Model: {name} | PyTorch {mode} | Precision: {precision} | Latency: {ms:.3f} ms", flush=True)
    env = gpu_environment(torch)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "pytorch.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out_dir, "pytorch.json"), "w") as f:
        json.dump({"environment": env, "rows": rows}, f, indent=1)
    if args.census:
        with open(args.census, "w") as f:
            json.dump({"environment": env, "runs": census}, f, indent=1)
    if args.ours:
        with open(args.ours) as f:
            ours = list(csv.DictReader(f))
        print("\nmodel         ours (policy, ms)                    PyTorch best fp32 (mode, ms)   speedup")
        for name in args.models.split(","):
            best = min((r for r in rows if r["model"] == name and r["precision"] == "fp32"),
                       key=lambda r: r["latency_ms"])
            for r in ours:
                if r["model"] == name:
                    ms = float(r["latency_ms"])
                    print(f"{name:13s} {r['policy']:14s} {ms:8.3f}            {best['mode']:8s} {best['latency_ms']:8.3f}"
                          f"        {best['latency_ms'] / ms:5.2f}x")


if __name__ == "__main__":
    main()
