#!/usr/bin/env python3
"""Turns the experiment CSVs and traces in a results folder into PNGs like IOS's figures.

latency.csv -> latency.png (throughput normalised to Sequential, per network and policy);
batchsize.csv -> batchsize.png (throughput vs batch size); prune.csv -> prune.png (search time vs
latency); *.trace.json -> <trace>.png (kernel timeline, one row per stream). Needs matplotlib.
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
        ax.set_title("Batch 1, H100, fp32")
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
        fig.tight_layout()
        fig.savefig(f"{d}/batchsize.png", dpi=120)
        wrote.append("batchsize.png")
    if os.path.exists(f"{d}/prune.csv"):
        r = rows(f"{d}/prune.csv")
        fig, axes = plt.subplots(1, len(set(x["model"] for x in r)), figsize=(10, 4), squeeze=False)
        for ax, m in zip(axes[0], dict.fromkeys(x["model"] for x in r)):
            for x in (x for x in r if x["model"] == m):
                ax.scatter(float(x["search_s"]), float(x["latency_ms"]))
                ax.annotate(f"r={x['r']},s={x['s']}", (float(x["search_s"]), float(x["latency_ms"])), fontsize=8)
            ax.set_title(m)
            ax.set_xlabel("search time (s)")
            ax.set_ylabel("latency (ms)")
        fig.tight_layout()
        fig.savefig(f"{d}/prune.png", dpi=120)
        wrote.append("prune.png")
    for trace in sorted(glob.glob(f"{d}/*.trace.json")):
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        spans = [e for e in events if e["ph"] == "X"]
        names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
        rows_used = sorted({e["tid"] for e in spans})
        fig, ax = plt.subplots(figsize=(12, 0.4 * len(rows_used) + 1.2))
        for e in spans:
            ax.barh(rows_used.index(e["tid"]), e["dur"], left=e["ts"], height=0.8)
        ax.set_yticks(range(len(rows_used)), [names.get(t, str(t)) for t in rows_used])
        ax.set_xlabel("time (us)")
        ax.set_title(os.path.basename(trace).replace(".trace.json", ""))
        fig.tight_layout()
        out = trace.replace(".trace.json", ".timeline.png")
        fig.savefig(out, dpi=110)
        wrote.append(os.path.basename(out))
    print("wrote " + (", ".join(wrote) if wrote else "nothing (no results found)"))


if __name__ == "__main__":
    main()
