#!/usr/bin/env python3
"""PyTorch's kernels for one inference of a torchvision model (torch.profiler, CUDA activity).

fp32 with TF32 off, cudnn.benchmark on, eval mode, random weights, batch 1, 20 warm-up inferences; prints
the kernel count, their summed time and the 30 kernels with the most time (grouped by name).

  torch_kernel_profile.py [--model densenet121] [--size 224]
"""
import argparse
import collections

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="densenet121")
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None).eval().cuda()
    x = torch.randn(1, 3, args.size, args.size, device="cuda")
    with torch.inference_mode():
        for _ in range(20):
            model(x)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            model(x)
            torch.cuda.synchronize()
    rows = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            rows[e.name[:110]][0] += 1
            rows[e.name[:110]][1] += e.device_time
    total = sum(v[1] for v in rows.values())
    print(f"kernels {sum(v[0] for v in rows.values())} total {total:.1f} us")
    for name, (n, us) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:30]:
        print(f"{us:8.1f} us n={n:4d} {name}")


if __name__ == "__main__":
    main()
