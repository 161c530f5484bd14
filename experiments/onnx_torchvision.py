#!/usr/bin/env python3
"""Bring-your-own-model check: torchvision models (and timm models, named timm:NAME) exported to ONNX,
imported by `ios`, run with every policy on the GPU and compared with PyTorch's output on the same input;
IOS-Both timed beside PyTorch's CUDA graph and torch.compile on the same topology and weights. timm
models run at 224 x 224 with timm's own init; a model that fails to export is reported as such.

Per model: seeded random weights (torch.manual_seed(0), torchvision's own init) with BatchNorm statistics
and affine parameters drawn at random too (at init they are the identity, which would hide a wrong fold);
eval mode; exported with torch.onnx.export (TorchScript exporter, opset 17; --dynamo uses the dynamo
exporter). The reference output is PyTorch's on the CPU in fp32. Every policy runs through
`ios run --onnx M --input x.npy --output y.npy --check` (fp32: analytic-model schedules, so the search is
quick; the check also compares with our CPU reference); IOS-Both is searched again with the measured cost
model for the timing row. PyTorch runs in fp32 with TF32 off (our fp32 is strict fp32), cudnn.benchmark on.
With --rounds N, the analytic-schedule runs and PyTorch's modes are timed N times, interleaved (one
round: every `ios run` of the model, then every PyTorch mode), and each latency is the median of its
rounds (all rounds in the JSON): timings of one GPU drift between processes by more than the
differences being compared.

Needs: PyTorch, torchvision, onnx, numpy, a CUDA GPU, and the `ios` binary (--ios).
Writes <out>/onnx_torchvision.csv, .json and one folder of files per model.
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time

from compare_pytorch import gpu_environment, make_runner, timed

MODELS = {  # name: (input size, constructor arguments)
    "googlenet": (224, {"aux_logits": False, "init_weights": True}),
    "inception_v3": (299, {"aux_logits": False, "init_weights": True}),
    "squeezenet1_0": (224, {}),
    "squeezenet1_1": (224, {}),
    "resnet50": (224, {}),
    "mobilenet_v2": (224, {}),
    "densenet121": (224, {}),
    "efficientnet_b0": (224, {}),
    "efficientnet_v2_s": (224, {}),
    "mobilenet_v3_large": (224, {}),
    "mobilenet_v3_small": (224, {}),
    "regnet_y_400mf": (224, {}),
    "regnet_y_1_6gf": (224, {}),
    "mnasnet1_0": (224, {}),
    "shufflenet_v2_x1_0": (224, {}),
    "convnext_tiny": (224, {}),
    # Segmentation (torchvision.models.segmentation): the "out" head only; weights_backbone=None, so
    # nothing is downloaded.
    "fcn_resnet50": (224, {"weights_backbone": None}),
    "deeplabv3_resnet50": (224, {"weights_backbone": None}),
    "lraspp_mobilenet_v3_large": (224, {"weights_backbone": None}),
}
SEGMENTATION = {"fcn_resnet50", "deeplabv3_resnet50", "lraspp_mobilenet_v3_large"}
POLICIES = ["sequential", "greedy", "dp_merge", "dp_parallel", "dp_parallel_merge", "opara"]


def build_model(name, torch, torchvision):
    torch.manual_seed(0)
    if name.startswith("timm:"):
        import timm
        size, model = 224, timm.create_model(name[5:], pretrained=False).eval()
    else:
        size, kwargs = MODELS[name]
        family = torchvision.models.segmentation if name in SEGMENTATION else torchvision.models
        model = getattr(family, name)(weights=None, **kwargs).eval()
    if name in SEGMENTATION:
        class OutHead(torch.nn.Module):  # the dict's "out" tensor: what the exported graph's output is
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        model = OutHead(model).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(2))
    return model, x


def ios(args, cmd, log, timeout):
    """Runs `ios CMD...`, appends its output to log; (return code, output)."""
    t0 = time.time()
    try:
        p = subprocess.run([args.ios] + cmd, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() + f"\nTIMEOUT after {timeout} s", 124
    with open(log, "a") as f:
        f.write(f"$ ios {' '.join(cmd)}\n{out}\n[rc {rc}, {time.time() - t0:.1f} s]\n\n")
    return rc, out


def rel_l2(a, b, np):
    return float(np.linalg.norm(a.ravel() - b.ravel()) / np.linalg.norm(b.ravel()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ios", default="build/bin/ios")
    ap.add_argument("--out", default="experiments/results/latest/onnx")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--pytorch-modes", default="graph,compile")
    ap.add_argument("--dynamo", action="store_true", help="export with the dynamo exporter")
    ap.add_argument("--import-only", action="store_true", help="export and import, run nothing")
    ap.add_argument("--skip-measured", action="store_true", help="no measured-cost-model IOS-Both run")
    ap.add_argument("--search-timeout", type=int, default=300, help="seconds for the measured IOS-Both search")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved timing rounds (medians reported)")
    ap.add_argument("--ios-run-flags", default="", help="extra flags for every `ios run`, e.g. '--conv-engine X'")
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"onnx_torchvision.py needs numpy, PyTorch and torchvision: {e}")
    if not torch.cuda.is_available():
        sys.exit("onnx_torchvision.py needs a CUDA GPU")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    extra = args.ios_run_flags.split()
    rows = []

    def write_outputs():  # after every model, so a run cut short by a timeout keeps what it measured
        env = dict(gpu_environment(torch), torchvision=torchvision.__version__,
                   ios=subprocess.run([args.ios, "--version"], capture_output=True, text=True).stdout.strip())
        fields = ["model", "framework", "policy", "cost_model", "rc", "latency_ms", "rel_l2_vs_pytorch",
                  "argmax_match", "rel_l2_vs_our_cpu", "compile_s", "onnx_mb", "import_s", "ops", "blocks"]
        with open(os.path.join(args.out, "onnx_torchvision.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(args.out, "onnx_torchvision.json"), "w") as f:
            json.dump({"environment": env, "rows": rows}, f, indent=1)

    for name in args.models.split(","):
        if name not in MODELS and not name.startswith("timm:"):
            sys.exit(f"--models: unknown model '{name}' ({', '.join(MODELS)}, or timm:NAME)")
        d = os.path.join(args.out, name.replace(":", "_"))
        os.makedirs(d, exist_ok=True)
        log = os.path.join(d, "ios.log")
        open(log, "w").close()
        onnx_path = os.path.join(d, name.replace(":", "_") + ".onnx")
        try:
            model, x = build_model(name, torch, torchvision)
            with torch.no_grad():
                ref = model(x).numpy()
                torch.onnx.export(model, (x,), onnx_path, opset_version=17, dynamo=args.dynamo,
                                  input_names=["input"], output_names=["logits"])
        except Exception as e:  # the model or the exporter, not ours: reported, and the next model runs
            print(f"== {name}: export failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            rows.append({"model": name, "framework": "ios", "policy": "export", "cost_model": "-", "rc": "export failed"})
            continue
        np.save(os.path.join(d, "x.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(d, "pytorch_out.npy"), ref.astype(np.float32))
        rc, out = ios(args, ["import", "--onnx", onnx_path], log, 120)
        m = re.search(r"in ([0-9.]+) s: (\d+) ops in (\d+) blocks", out)
        print(f"== {name}: import rc {rc}, {m.group(0) if m else out.strip()[-300:]}", flush=True)
        base = {"model": name, "onnx_mb": round(os.path.getsize(onnx_path) / 2**20, 1),
                "import_s": float(m.group(1)) if m else None, "ops": int(m.group(2)) if m else None,
                "blocks": int(m.group(3)) if m else None}
        if args.import_only:
            rows.append(dict(base, framework="ios", policy="import", cost_model="-", rc=rc))
            write_outputs()
            continue
        runs = [(p, "analytic") for p in args.policies.split(",")]
        if not args.skip_measured:
            runs.append(("dp_parallel_merge", "measured"))
        ios_rows = {}
        for policy, cost_model in runs:
            y = os.path.join(d, f"y_{policy}_{cost_model}.npy")
            rj = os.path.join(d, f"run_{policy}_{cost_model}.json")
            cmd = ["run", "--onnx", onnx_path, "--opt", policy, "--cost-model", cost_model, "--input",
                   os.path.join(d, "x.npy"), "--output", y, "--check", "--json", rj, "--quiet"] + extra
            rc, out = ios(args, cmd, log, args.search_timeout + 120)
            row = dict(base, framework="ios", policy=policy, cost_model=cost_model, rc=rc)
            if rc == 0 and os.path.exists(y):
                got = np.load(y)
                r = json.load(open(rj))
                row.update(latency_rounds=[r["latency_ms"]["median"]], rel_l2_vs_pytorch=rel_l2(got, ref, np),
                           argmax_match=bool(got.reshape(-1).argmax() == ref.reshape(-1).argmax()),
                           rel_l2_vs_our_cpu=r["check"]["relative_l2_error"])
            rows.append(row)
            ios_rows[(policy, cost_model)] = row
            print(f"   {policy:18s} {cost_model:9s} rc {rc} latency {row.get('latency_rounds', ['-'])[0]} ms "
                  f"rel-L2 vs PyTorch {row.get('rel_l2_vs_pytorch', '-')} argmax {row.get('argmax_match', '-')}",
                  flush=True)
        cuda_model, cuda_x = model.cuda(), x.cuda()
        modes = [m for m in args.pytorch_modes.split(",") if m]
        runners = {}

        def make(mode):
            torch._dynamo.reset()
            fn, compile_s = make_runner(cuda_model, cuda_x, mode, torch)
            row = dict(base, framework="pytorch " + torch.__version__, policy=mode, cost_model="-", rc=0,
                       compile_s=round(compile_s, 1), latency_rounds=[])
            if mode != "graph":
                row["rel_l2_vs_pytorch"] = rel_l2(fn().float().cpu().numpy(), ref, np)
            runners[mode] = (fn, row)
            rows.append(row)

        with torch.inference_mode():
            # Only the captured graph takes part in the rounds: torch.compile's CUDA-graph trees invalidate
            # a graph captured before them (an illegal address when it is replayed), so compile runs last.
            if "graph" in modes:
                make("graph")
            for rnd in range(args.rounds):
                if rnd > 0:  # the first round's ios timings came with the checks above
                    for (policy, cost_model), row in ios_rows.items():
                        if cost_model != "analytic" or "latency_rounds" not in row:
                            continue
                        rj = os.path.join(d, f"round_{policy}.json")
                        rc, _ = ios(args, ["run", "--onnx", onnx_path, "--opt", policy, "--cost-model", "analytic",
                                           "--json", rj, "--quiet"] + extra, log, 300)
                        if rc == 0:
                            row["latency_rounds"].append(json.load(open(rj))["latency_ms"]["median"])
                for mode, (fn, row) in runners.items():
                    row["latency_rounds"].append(round(timed(fn, 50, 100, 5, torch), 4))
            for mode in modes:
                if mode != "graph":
                    make(mode)
                    fn, row = runners[mode]
                    row["latency_rounds"].append(round(timed(fn, 50, 100, 5, torch), 4))
        for row in rows:
            if row.get("model") == name and row.get("latency_rounds"):
                row["latency_ms"] = statistics.median(row["latency_rounds"])
        for mode, (_, row) in runners.items():
            print(f"   pytorch {mode:10s} latency {row['latency_ms']:.3f} ms (rounds {row['latency_rounds']})", flush=True)
        if args.rounds > 1:
            for (policy, cost_model), row in ios_rows.items():
                if "latency_rounds" in row:
                    print(f"   {policy:18s} {cost_model:9s} latency {row['latency_ms']:.3f} ms "
                          f"(rounds {row['latency_rounds']})", flush=True)
        del runners
        model.cpu()
        write_outputs()
    write_outputs()
    failures = [r for r in rows if r["framework"] == "ios" and r["rc"] != "export failed" and (r["rc"] != 0 or (
        not args.import_only and (r.get("rel_l2_vs_pytorch", 1) > 1e-4 or not r.get("argmax_match"))))]
    print(f"{len(failures)} of {sum(r['framework'] == 'ios' for r in rows)} ios runs failed the check", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
