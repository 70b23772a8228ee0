#!/usr/bin/env python3
"""Plot bench_trainer's measurements: plot_trainer.py TRAINER.CSV OUT.PNG

Left: each variant's step at each rank count, stacked as compute, the wait for communication
after the backward pass, and optimizer (medians of the slowest rank, ms). Right: the
bucket-size sweep, exposed communication (the step minus the no-communication step of the
same round) against the number of buckets, one line per rank count, with the flat step's as
a dashed line of the same colour.
"""
import csv
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_trainer.py: matplotlib is missing (Debian: apt-get install python3-matplotlib; "
              "or pip install matplotlib)", file=sys.stderr)
        return 1
    with open(argv[0], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"plot_trainer.py: {argv[0]} has no measurements", file=sys.stderr)
        return 1

    def label(r):
        return f"bucketed({r['buckets']})" if r["variant"] == "bucketed" else r["variant"]

    ranks = sorted({int(r["ranks"]) for r in rows})
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [3, 2]})
    xs, names = [], []
    parts = {"compute": [], "wait for communication": [], "optimizer": []}
    x = 0
    for n in ranks:
        for r in (r for r in rows if int(r["ranks"]) == n):
            xs.append(x)
            names.append(f"{label(r)}\n{n} rank{'s' if n > 1 else ''}")
            parts["compute"].append(float(r["compute_ms"]))
            parts["wait for communication"].append(float(r["wait_ms"]))
            parts["optimizer"].append(float(r["optimizer_ms"]))
            x += 1
        x += 1
    bottom = [0.0] * len(xs)
    for (name, values), colour in zip(parts.items(), ("#4c72b0", "#dd8452", "#55a868")):
        left.bar(xs, values, bottom=bottom, label=name, color=colour)
        bottom = [b + v for b, v in zip(bottom, values)]
    left.set_xticks(xs)
    left.set_xticklabels(names, rotation=90, fontsize=7)
    left.set_ylabel("step time, ms (median of the slowest rank)")
    left.set_title("Step time: compute, waiting for communication, optimizer")
    left.legend()

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, n in enumerate(ranks):
        sweep = sorted(((int(r["buckets"]), float(r["exposed_comm_ms"])) for r in rows
                        if int(r["ranks"]) == n and r["variant"] == "bucketed"))
        if not sweep:
            continue
        c = colours[i % len(colours)]
        right.plot([b for b, _ in sweep], [t for _, t in sweep], "o-", color=c, label=f"bucketed, {n} ranks")
        flat = [float(r["exposed_comm_ms"]) for r in rows if int(r["ranks"]) == n and r["variant"] == "flat"]
        if flat:
            right.axhline(flat[0], color=c, linestyle="--", linewidth=1, label=f"flat, {n} ranks")
    right.set_xscale("log", base=2)
    right.set_xlabel("buckets per step")
    right.set_ylabel("exposed communication, ms (step - no-communication step)")
    right.set_title("Bucket-size sweep")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=120)
    print(f"plot: {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
