#!/usr/bin/env python3
"""Each stage's figure (what the DP summed) beside its window in the real network (what it cost there).

Inputs: `exp_replay --model M --stage-cache S --schedule F` output (one line per stage) and `ios run --schedule F
--trace T` (a CUPTI timeline whose kernels carry their stage). A stage's window runs from the end of the
previous stage's last kernel to the end of its own last kernel, so the windows add up to the network's span.
A stage that launches no kernel in the network (a concatenation its producers wrote in place) has a window
of 0.

    python3 experiments/stage_windows.py densenet121_figures.txt densenet121_trace.json
"""
import argparse
import collections
import json
import re


def figures_us(path):
    out = {}
    for line in open(path):
        m = re.match(r"stage (\d+) \| \w+ \| \d+ groups, \d+ ops \| ([\d.]+) ms", line)
        if m:
            out[int(m.group(1))] = float(m.group(2)) * 1000
    return out


def windows_us(path):
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel" or "stage" not in e.get("args", {}):
            continue
        s = e["args"]["stage"]
        start, end, kernels = spans.get(s, (float("inf"), 0.0, 0))
        spans[s] = (min(start, e["ts"]), max(end, e["ts"] + e["dur"]), kernels + 1)
    out, previous_end = {}, None
    for s in sorted(spans, key=lambda k: spans[k][0]):
        start, end, kernels = spans[s]
        out[s] = (end - (start if previous_end is None else previous_end), kernels)
        previous_end = end
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("figures")
    p.add_argument("trace")
    a = p.parse_args()
    try:
        fig, win = figures_us(a.figures), windows_us(a.trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"error: {e}")
    missing = sorted(set(win) - set(fig))
    if missing:
        raise SystemExit(f"error: stages {missing} of the trace have no figure")
    for s in set(fig) - set(win):
        win[s] = (0.0, 0)
    diff = {s: fig[s] - win[s][0] for s in fig}
    print(f"stage figures sum {sum(fig.values()):.1f} us, windows in the network sum "
          f"{sum(w for w, _ in win.values()):.1f} us; figure - window per stage: mean "
          f"{sum(diff.values()) / len(diff):+.2f} us, min {min(diff.values()):+.2f}, max {max(diff.values()):+.2f}")
    by_kernels = collections.defaultdict(list)
    for s in fig:
        by_kernels[win[s][1]].append(diff[s])
    for k in sorted(by_kernels):
        d = by_kernels[k]
        print(f"  stages of {k} kernels: {len(d)}, figure - window mean {sum(d) / len(d):+.2f} us")
    print("per stage (figure - window, us): " + " ".join(f"{s}:{diff[s]:+.0f}" for s in sorted(fig)))


if __name__ == "__main__":
    main()
