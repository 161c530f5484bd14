#!/usr/bin/env python3
"""Turns the experiment CSVs and traces in a results folder into PNGs like IOS's figures.

latency.csv -> latency.png (throughput normalised to Sequential, per network and policy);
batchsize.csv -> batchsize.png (throughput vs batch size); prune.csv -> prune.png (search time vs
latency); *.trace.json -> <trace>.timeline.png (kernel timeline, one row per stream, kernels coloured by
kind, one x scale for the folder). Titles come from the data (GPU, precision, batch, cost model).
Needs matplotlib.
"""
import argparse
import csv
import glob
import json
import os
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def describe(d, stem, r):
    """A title from the data: GPU (the table's JSON environment), precision, batch, cost model."""
    parts = []
    try:
        with open(f"{d}/{stem}.json") as f:
            device = json.load(f)["environment"]["device"]
        parts.append(device.split(",")[0])
    except (OSError, KeyError, ValueError):
        pass
    for column, fmt in (("precision", "{}"), ("batch", "batch {}"), ("cost_model", "{} cost model")):
        values = sorted({x[column] for x in r if x.get(column)})
        if values:
            parts.append(fmt.format("/".join(values)))
    return ", ".join(parts)


# Timeline colours by what a kernel does (its name), with a legend.
KERNEL_KINDS = (("convolution", ("fprop", "conv", "xmma", "implicit", "winograd", "fft")),
                ("gemm (linear)", ("gemm", "cublas")), ("pooling", ("pool",)),
                ("gather / concat / sum", ("gather",)), ("bias / activation", ("bias", "act")))


def kernel_kind(name):
    low = name.lower()
    for kind, keys in KERNEL_KINDS:
        if any(k in low for k in keys):
            return kind
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", help="folder holding the experiment outputs")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_results.py needs matplotlib (pip install matplotlib)")
    d = args.results
    wrote = []
    if os.path.exists(f"{d}/latency.csv"):
        r = rows(f"{d}/latency.csv")
        models = list(dict.fromkeys(x["model"] for x in r))
        policies = list(dict.fromkeys(x["policy"] for x in r))
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / len(policies)
        for j, p in enumerate(policies):
            vals = []
            for m in models:
                seq = [float(x["latency_ms"]) for x in r if x["model"] == m and x["policy"] == "Sequential"]
                mine = [float(x["latency_ms"]) for x in r if x["model"] == m and x["policy"] == p]
                vals.append(seq[0] / mine[0] if seq and mine else 0)
            ax.bar([i + j * width for i in range(len(models))], vals, width, label=p)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(models))], models)
        ax.set_ylabel("throughput / Sequential")
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.legend(ncol=3, fontsize=8)
        ax.set_title("Latency vs Sequential: " + describe(d, "latency", r))
        fig.tight_layout()
        fig.savefig(f"{d}/latency.png", dpi=120)
        wrote.append("latency.png")
    if os.path.exists(f"{d}/batchsize.csv"):
        r = rows(f"{d}/batchsize.csv")
        fig, ax = plt.subplots(figsize=(6, 4))
        for p in dict.fromkeys(x["policy"] for x in r):
            pts = sorted((int(x["batch"]), float(x["throughput_img_s"])) for x in r if x["policy"] == p)
            ax.plot([b for b, _ in pts], [t for _, t in pts], marker="o", label=p)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel("images / s")
        ax.legend()
        ax.set_title("Throughput vs batch size: " + describe(d, "batchsize", r))
        fig.tight_layout()
        fig.savefig(f"{d}/batchsize.png", dpi=120)
        wrote.append("batchsize.png")
    if os.path.exists(f"{d}/prune.csv"):
        r = rows(f"{d}/prune.csv")
        fig, axes = plt.subplots(1, len(set(x["model"] for x in r)), figsize=(10, 4), squeeze=False)
        for ax, m in zip(axes[0], dict.fromkeys(x["model"] for x in r)):
            points = sorted((float(x["search_s"]), float(x["latency_ms"]), x) for x in r if x["model"] == m)
            for k, (sx, sy, x) in enumerate(points):
                ax.scatter(sx, sy)
                # Alternate label offsets: neighbouring (r, s) points otherwise print on top of each other.
                ax.annotate(f"r={x['r']},s={x['s']}", (sx, sy), xytext=(4, 8 if k % 2 else -12),
                            textcoords="offset points", fontsize=7)
            ax.set_title(m)
            ax.set_xlabel("search time (s)")
            ax.set_ylabel("latency (ms)")
        fig.suptitle("Pruning r, s: search time vs latency: " + describe(d, "prune", r))
        fig.tight_layout()
        fig.savefig(f"{d}/prune.png", dpi=120)
        wrote.append("prune.png")
    traces = {}
    for trace in sorted(glob.glob(f"{d}/*.trace.json")):
        with open(trace) as f:
            traces[trace] = json.load(f)["traceEvents"]
    # One x scale for every timeline of the folder, so they compare side by side.
    span_end = max((e["ts"] + e["dur"] for ev in traces.values() for e in ev if e["ph"] == "X"), default=1)
    colours = {kind: f"C{i}" for i, (kind, _) in enumerate(KERNEL_KINDS + (("other", ()),))}
    for trace, events in traces.items():
        spans = [e for e in events if e["ph"] == "X"]
        names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
        rows_used = sorted({e["tid"] for e in spans})
        fig, ax = plt.subplots(figsize=(12, 0.4 * len(rows_used) + 1.6))
        seen = set()
        for e in spans:
            kind = kernel_kind(e.get("args", {}).get("kernel", e["name"]))
            ax.barh(rows_used.index(e["tid"]), e["dur"], left=e["ts"], height=0.8, color=colours[kind],
                    label=None if kind in seen else kind)
            seen.add(kind)
        ax.set_yticks(range(len(rows_used)), [names.get(t, str(t)) for t in rows_used])
        ax.set_xlim(0, span_end)
        ax.set_xlabel("time (us), same scale for every timeline of this folder")
        ax.legend(loc="upper right", fontsize=7, ncol=3)
        ax.set_title(os.path.basename(trace).replace(".trace.json", "") + " (one inference, CUPTI)")
        fig.tight_layout()
        out = trace.replace(".trace.json", ".timeline.png")
        fig.savefig(out, dpi=110)
        wrote.append(os.path.basename(out))
    print("wrote " + (", ".join(wrote) if wrote else "nothing (no results found)"))


if __name__ == "__main__":
    main()
