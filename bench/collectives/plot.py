#!/usr/bin/env python3
"""Plots bench_collectives' CSV: bus bandwidth against message size, one panel per
collective, one line per algorithm and rank count (out of place; the library dashed).

    plot.py RESULTS.csv [OUT.png]     (default: RESULTS.png beside the CSV)

Needs matplotlib (Debian: python3-matplotlib; pip: matplotlib).
"""

import csv
import math
import os
import sys

ORDER = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "gather", "scatter", "alltoall"]
LIBRARIES = ("mpi", "nccl")


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"collective", "impl", "ranks", "bytes", "in_place", "busbw_gbs"}
    if rows and not need <= set(rows[0]):
        raise ValueError(f"{path}: not a bench_collectives CSV (columns {sorted(rows[0])})")
    return rows


def series(rows):
    """{collective: {(impl, ranks): [(bytes, busbw)]}} for out-of-place rows with a time."""
    out = {}
    for r in rows:
        if r["in_place"] != "0":
            continue
        key = (r["impl"], int(r["ranks"]))
        out.setdefault(r["collective"], {}).setdefault(key, []).append((int(r["bytes"]), float(r["busbw_gbs"])))
    for per in out.values():
        for pts in per.values():
            pts.sort()
    return out


def plot(csv_path, png_path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot.py: matplotlib is missing: install python3-matplotlib (apt) or matplotlib (pip)")
    data = series(read_rows(csv_path))
    if not data:
        sys.exit(f"plot.py: {csv_path} holds no measurements")
    kinds = [k for k in ORDER if k in data] + sorted(k for k in data if k not in ORDER)
    cols = min(4, len(kinds))
    rows = math.ceil(len(kinds) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "os^Dv<>p"
    for ax, kind in zip(axes.flat, kinds):
        # One colour per algorithm, one marker per rank count; the library dashed.
        impls = sorted({impl for impl, _ in data[kind]})
        rank_counts = sorted({n for _, n in data[kind]})
        for (impl, ranks), pts in sorted(data[kind].items()):
            xs = [b for b, _ in pts if b > 0]
            ys = [bw for b, bw in pts if b > 0]
            if not xs:
                continue
            ax.plot(xs, ys, linestyle="--" if impl in LIBRARIES else "-",
                    color=colors[impls.index(impl) % len(colors)],
                    marker=markers[rank_counts.index(ranks) % len(markers)], markersize=4, label=f"{impl} n={ranks}")
        ax.set_xscale("log", base=2)
        ax.set_title(kind)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(kinds):]:
        ax.set_visible(False)
    fig.suptitle("bench_collectives: bus bandwidth, out of place (library dashed)")
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return png_path


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    csv_path = argv[1]
    png_path = argv[2] if len(argv) > 2 else os.path.splitext(csv_path)[0] + ".png"
    print(plot(csv_path, png_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
