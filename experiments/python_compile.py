#!/usr/bin/env python3
"""ios.compile on torchvision models beside the module itself and torch.compile (reduce-overhead), in one
process, batch 1. Per model and precision:

- compile seconds (export + build) and, from the plan cache, a second compile's seconds;
- relative L2 of ios.compile's output against the module's fp32 output (TF32 off), and the arg-max;
- per-call latency (CUDA events around each call, median of blocks of medians) of the compiled module,
  of the engine's context enqueueing into a preallocated output (the engine's own latency), and of
  torch.compile at the same precision (fp16: module.half()), interleaved in rounds;
- host time per call of the compiled module and of the bare enqueue (perf_counter, median).

Weights: onnx_torchvision.py's (torchvision's initialization, BatchNorm statistics drawn at random), except
Inception V3's convolutions, re-drawn He-normal (fan-in, ReLU gain): with torchvision's std 0.1 its outputs
reach 7.9e13 and the module itself overflows fp16 (results/h200/python/inception_fp16_overflow.txt).
`module_fp16_finite` says whether the module run in fp16 gives a finite output, and `torch_fp16_rel_l2` how
far PyTorch's own fp16 output is from its fp32 one: the scale of fp16 rounding on these random weights.

Writes <out>/python_compile.csv as it goes. Needs PyTorch, torchvision, onnx (and onnxscript for PyTorch's
default exporter), a CUDA GPU, and the ios package importable.
"""
import argparse
import copy
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import make_runner, timed  # noqa: E402
from onnx_torchvision import build_model  # noqa: E402

TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}


def host_us(fn, torch, iters=300):
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="googlenet,resnet50,inception_v3")
    ap.add_argument("--precisions", default="fp16,fp32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="", help="plan cache folder (default: <out>/plans)")
    ap.add_argument("--no-torch-compile", action="store_true")
    args = ap.parse_args()
    import torch
    import torchvision

    import ios

    torch.backends.cudnn.allow_tf32 = False  # the fp32 reference and fp32 torch.compile: strict fp32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    os.makedirs(args.out, exist_ok=True)
    table = os.path.join(args.out, "python_compile.csv")
    columns = ["model", "precision", "compile_s", "cached_compile_s", "rel_l2_vs_module", "tolerance",
               "same_argmax", "module_fp16_finite", "torch_fp16_rel_l2", "schedule", "execution", "ios_compile_ms", "engine_enqueue_ms", "overhead_us",
               "torch_compile_ms", "torch_compile_over_ios", "host_call_us", "host_enqueue_us"]
    if not os.path.exists(table):
        with open(table, "w", newline="") as f:
            csv.writer(f).writerow(columns)
    cache = args.cache or os.path.join(args.out, "plans")
    for name in args.models.split(","):
        model, x_cpu = build_model(name, torch, torchvision)
        if name == "inception_v3":
            torch.manual_seed(2)
            with torch.no_grad():
                for m in model.modules():
                    if isinstance(m, torch.nn.Conv2d):
                        torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        model = model.cuda().eval()
        x = x_cpu.cuda()
        with torch.no_grad():
            reference = model(x).float()
            half = copy.deepcopy(model).half()(x.half()).float()
            fp16_finite = bool(torch.isfinite(half).all())
            torch_fp16_rel = float((half.double() - reference.double()).norm() / reference.double().norm())
        for precision in args.precisions.split(","):
            t0 = time.time()
            try:
                fast = ios.compile(model, x, precision=precision, cache_dir=cache)
            except ios.Error as e:  # recorded, and the next case runs
                print(f"{name} {precision}: {e}", flush=True)
                with open(table, "a", newline="") as f:
                    csv.writer(f).writerow([name, precision, "", "", f"error: {e}"] + [""] * (len(columns) - 5))
                continue
            compile_s = time.time() - t0
            t0 = time.time()
            fast = ios.compile(model, x, precision=precision, cache_dir=cache)
            cached_s = time.time() - t0
            with torch.no_grad():
                got = fast(x)
            torch.cuda.synchronize()
            rel = float((got.double() - reference.double()).norm() / reference.double().norm())
            same_argmax = bool(torch.equal(got.argmax(1), reference.argmax(1)))
            ctx = fast.engine.create_context()
            out = torch.empty(fast.engine.output_shape, device="cuda")
            stream = torch.cuda.current_stream().cuda_stream
            enqueue = lambda: ctx._ctx.enqueue(x, out, stream)  # noqa: E731
            call = lambda: fast(x)  # noqa: E731
            tc = None
            if not args.no_torch_compile:
                m = model if precision == "fp32" else copy.deepcopy(model).half()
                xt = x if precision == "fp32" else x.half()
                torch._dynamo.reset()
                with torch.inference_mode():
                    tc, _ = make_runner(m, xt, "compile", torch)
            ios_ms, eng_ms, tc_ms = [], [], []
            with torch.inference_mode():
                for _ in range(args.rounds):
                    ios_ms.append(timed(call, 20, 200, 3, torch))
                    eng_ms.append(timed(enqueue, 20, 200, 3, torch))
                    if tc:
                        tc_ms.append(timed(tc, 20, 200, 3, torch))
                host_call, host_enqueue = host_us(call, torch), host_us(enqueue, torch)
            row = dict(model=name, precision=precision, compile_s=round(compile_s, 1),
                       cached_compile_s=round(cached_s, 2), rel_l2_vs_module=f"{rel:.2e}",
                       tolerance=TOLERANCE.get(precision, 1e-2), same_argmax=same_argmax,
                       module_fp16_finite=fp16_finite, torch_fp16_rel_l2=f"{torch_fp16_rel:.2e}",
                       schedule=fast.engine.schedule, execution=fast.engine.execution,
                       ios_compile_ms=round(statistics.median(ios_ms), 4),
                       engine_enqueue_ms=round(statistics.median(eng_ms), 4),
                       overhead_us=round((statistics.median(ios_ms) - statistics.median(eng_ms)) * 1000, 1),
                       torch_compile_ms=round(statistics.median(tc_ms), 4) if tc_ms else "",
                       torch_compile_over_ios=round(statistics.median(tc_ms) / statistics.median(ios_ms), 2)
                       if tc_ms else "",
                       host_call_us=round(host_call, 1), host_enqueue_us=round(host_enqueue, 1))
            print(row, flush=True)
            with open(table, "a", newline="") as f:
                csv.writer(f).writerow([row[c] for c in columns])
            del fast, ctx, tc
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
