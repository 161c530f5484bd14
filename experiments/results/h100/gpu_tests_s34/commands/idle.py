#!/usr/bin/env python3
"""Where a traced inference's GPU idles: kernels, span, summed kernel time, mean concurrency (summed time over
covered time) and the time no kernel runs.   idle.py TRACE.json.xz [...]"""
import json
import lzma
import sys

for path in sys.argv[1:]:
    with lzma.open(path) as f:
        d = json.load(f)
    events = d["traceEvents"] if isinstance(d, dict) else d
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")
    start, end = iv[0][0], max(b for _, b in iv)
    covered, gaps = 0.0, []
    cs, ce = iv[0]
    for s, e in iv[1:]:
        if s > ce:
            covered += ce - cs
            gaps.append(s - ce)
            cs, ce = s, e
        else:
            ce = max(ce, e)
    covered += ce - cs
    summed = sum(b - a for a, b in iv)
    print(f"{path}: {len(iv)} kernels, span {end - start:.1f} us, kernel time summed {summed:.1f} us, mean "
          f"concurrency {summed / covered:.2f}, idle {end - start - covered:.1f} us in {len(gaps)} gaps "
          f"(largest {max(gaps, default=0):.1f})")
