#!/usr/bin/env python3
"""Import breadth without a GPU: timm CNNs exported to ONNX, imported by `ios`, run on the CPU reference
executor (`ios run --device cpu`) and compared with PyTorch's fp32 output on the same input.

The models are a seeded random sample of timm's convolutional architectures (transformer and attention
families left out by name; --models names them instead), each at its default input size with timm's own
init and BatchNorm statistics drawn at random (as onnx_torchvision.py does). Exported with the TorchScript
exporter (opset 17) unless --dynamo. Random weights make some deep models ill-conditioned: their logits
reach 1e3-1e10 and PyTorch's own fp32 output differs from the same model run in fp64 by up to 100 %. So
the output is compared with PyTorch's fp64 output, and a model matches when its relative L2 to it is
under 1e-4, or under 4x PyTorch fp32's own (column pytorch_fp32_error) where that is larger.

Needs: PyTorch, timm, onnx, numpy (CPU builds are enough) and the `ios` binary (--ios).
Writes <out>/timm_breadth.csv and one folder per model (model.onnx is deleted after the run unless --keep).
"""
import argparse
import csv
import os
import random
import subprocess
import sys
import time

# Families whose blocks are attention or transformers, not convolutions (name prefixes).
NOT_CNN = (
    "vit", "deit", "swin", "beit", "cait", "xcit", "crossvit", "pit_", "levit", "tnt", "twins", "convit",
    "coat", "mvit", "maxvit", "maxxvit", "coatnet", "efficientformer", "edgenext", "mobilevit", "volo",
    "eva", "flexivit", "davit", "gcvit", "pvt", "poolformerv2", "fastvit", "repvit", "tiny_vit", "hiera",
    "sam2", "samvit", "vitamin", "mambaout", "nextvit", "rdnet", "inception_next", "caformer", "convformer",
    "metaformer", "gmlp", "gmixer", "mixer", "resmlp", "sequencer", "halo", "lambda", "bot", "sebotnet",
    "lamhalo", "nest_", "jx_nest", "visformer", "focalnet", "hgnet", "efficientvit", "cspresnext50_iabn",
    "mobilenetv4_conv_aa", "mobilenetv4_hybrid", "aimv2", "naflexvit", "fasternet", "shvit", "starnet",
    "mobileclip", "test_", "vgg_", "csatv2", "dinov", "siglip", "mobilenetv5", "deepseek", "gemma", "qwen",
    "swiftformer", "lowformer", "cpubone", "fastvit", "shvit", "emo_", "vit_",
)


def cnn_names(timm):
    return [n for n in timm.list_models() if not n.startswith(NOT_CNN)]


def build(name, torch, timm):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))[-2:]
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d) and m.running_mean is not None:
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                if m.weight is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                    m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
    x = torch.randn(1, 3, *size, generator=torch.Generator().manual_seed(2))
    return model, x


def first_error(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "error" in line.lower():  # the unsupported-operators error lists the nodes on the lines after it
            return " ".join(l.strip() for l in lines[i:i + 3])[:300]
    return text.strip().splitlines()[-1][:240] if text.strip() else ""


def check(name, args, torch, timm, np):
    d = os.path.join(args.out, name)
    os.makedirs(d, exist_ok=True)
    row = {"model": name, "stage": "", "rel_l2": "", "rel_l2_vs_fp32": "", "pytorch_fp32_error": "",
           "argmax_match": "", "seconds": "", "error": ""}
    t0 = time.time()
    try:
        model, x = build(name, torch, timm)
        with torch.no_grad():
            ref = model(x)
            ref = ref[0] if isinstance(ref, (tuple, list)) else ref
            exact = model.double()(x.double())
            exact = exact[0] if isinstance(exact, (tuple, list)) else exact
            model.float()
        onnx_path = os.path.join(d, "model.onnx")
        torch.onnx.export(model, (x,), onnx_path, opset_version=17 if not args.dynamo else 18,
                          dynamo=args.dynamo, input_names=["input"], output_names=["output"])
    except Exception as e:  # a model PyTorch cannot build or export is not ours to import
        row.update(stage="export", error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        return row
    np.save(os.path.join(d, "x.npy"), x.numpy())
    cmd = [args.ios, "run", "--device", "cpu", "--onnx", onnx_path, "--input", os.path.join(d, "x.npy"),
           "--output", os.path.join(d, "y.npy")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, rc = f"TIMEOUT after {args.timeout} s", 124
    with open(os.path.join(d, "ios.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    if not args.keep:
        os.remove(onnx_path)
    row["seconds"] = f"{time.time() - t0:.0f}"
    if rc != 0:
        row.update(stage="import" if "import" in out.lower() or "onnx" in out.lower() else "run",
                   error=first_error(out))
        return row
    y = np.load(os.path.join(d, "y.npy")).reshape(-1).astype(np.float64)
    r, e = ref.numpy().reshape(-1).astype(np.float64), exact.numpy().reshape(-1)
    if y.size != r.size:
        row.update(stage="compare", error=f"output has {y.size} values, PyTorch's {r.size}")
        return row
    norm = max(np.linalg.norm(e), 1e-30)
    rel, rel32, own = (float(np.linalg.norm(a - b) / norm) for a, b in ((y, e), (y, r), (r, e)))
    same = bool(np.argmax(y) == np.argmax(e)) or own > 1e-3  # an ill-conditioned model's arg-max is noise
    ok = rel < max(1e-4, 4 * own) and same
    row.update(rel_l2=f"{rel:.2e}", rel_l2_vs_fp32=f"{rel32:.2e}", pytorch_fp32_error=f"{own:.2e}",
               argmax_match=bool(np.argmax(y) == np.argmax(e)), stage="match" if ok else "mismatch")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ios", default="build/bin/ios")
    ap.add_argument("--out", default="experiments/results/latest/timm_breadth")
    ap.add_argument("--models", default="", help="comma-separated timm names (default: a random sample)")
    ap.add_argument("--sample", type=int, default=40, help="how many models to draw")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exclude", default="", help="file of names (one per line or comma-separated) not to draw")
    ap.add_argument("--timeout", type=int, default=600, help="seconds for one `ios run --device cpu`")
    ap.add_argument("--dynamo", action="store_true", help="export with the dynamo exporter (opset 18)")
    ap.add_argument("--keep", action="store_true", help="keep each model.onnx")
    args = ap.parse_args()
    import numpy as np
    import timm
    import torch
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    if args.models:
        names = args.models.split(",")
    else:
        excluded = set()
        if args.exclude:
            excluded = set(open(args.exclude).read().replace(",", "\n").split())
        pool = [n for n in cnn_names(timm) if n not in excluded]
        names = sorted(random.Random(args.seed).sample(pool, min(args.sample, len(pool))))
    os.makedirs(args.out, exist_ok=True)
    rows, t0 = [], time.time()
    for i, name in enumerate(names):
        row = check(name, args, torch, timm, np)
        rows.append(row)
        eta = (time.time() - t0) / (i + 1) * (len(names) - i - 1)
        print(f"[{i + 1}/{len(names)}, ETA {eta / 60:.0f} min] {name}: {row['stage']} {row['rel_l2']} {row['error']}",
              flush=True)
        with open(os.path.join(args.out, "timm_breadth.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    ok = sum(r["stage"] == "match" for r in rows)
    exported = sum(r["stage"] != "export" for r in rows)
    print(f"{ok} of {exported} exported models import and match ({len(rows) - exported} did not export)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
