#!/usr/bin/env python3
"""Plots handoff time against buffer size, zero-copy vs staging copy, from the CSV
that bench/interop.rs writes (--csv). Needs matplotlib (pip install matplotlib).

    scripts/lab/plot-bench.py gpu-out/bench.csv docs/img/handoff_vs_size.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, dst = sys.argv[1], sys.argv[2]
    rows = list(csv.DictReader(open(src)))
    series = {"zero-copy": [], "staging copy": [], "zero-copy latency": []}
    for r in rows:
        if r["section"] != "handoff" or " MiB " not in r["name"]:
            continue
        mib, rest = r["name"].split(" MiB ", 1)
        if rest in series:
            series[rest].append((int(mib), float(r["median_us"]), float(r["p99_us"])))
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    styles = {
        "staging copy": ("CUDA → host → Vulkan staging copy", "tab:red", "o-"),
        "zero-copy": ("zero-copy handoff, per frame (3 in flight)", "tab:green", "s-"),
        "zero-copy latency": ("zero-copy handoff, latency of one frame alone", "tab:olive", "^--"),
    }
    for key, pts in series.items():
        if not pts:
            continue
        pts.sort()
        label, color, fmt = styles[key]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], fmt, color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("buffer size (MiB)")
    ax.set_ylabel("time per frame (µs, median)")
    ax.set_title("Handing a CUDA-written buffer to Vulkan (NVIDIA H200)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst)
    print("wrote", dst)


if __name__ == "__main__":
    main()
