#!/usr/bin/python3
"""Plots train_gpt --metrics files (JSON lines) into one PNG: loss against step, against
training time (the sum of the step times, so evaluation is left out) and against training
FLOPs (train and validation), and bytes per axis per step (raw and sent).

    /usr/bin/python3 scripts/plot_metrics.py none.jsonl zhybrid.jsonl -o metrics.png

Each file is one curve, labelled by its file name (or --labels a,b,...). Needs matplotlib
(Debian: python3-matplotlib, loaded by /usr/bin/python3).
"""
import argparse
import json
import lzma
import os
import sys


def load(path):
    rows = []
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:  # bench/msparse keeps .jsonl.xz
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not a JSON line ({e})")
    if not rows:
        sys.exit(f"{path}: no metrics")
    return rows


def flops_of(r):
    """Cumulative training FLOPs: a number, or {"dense": F, "actual": F} (the FLOPs done)."""
    f = r.get("flops", float("nan"))
    return f.get("actual", float("nan")) if isinstance(f, dict) else f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="metrics files written by train_gpt --metrics")
    ap.add_argument("-o", "--out", default="metrics.png")
    ap.add_argument("--labels", help="comma-separated curve labels (default: file names)")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = args.labels.split(",") if args.labels else [os.path.splitext(os.path.basename(f))[0] for f in args.files]
    if len(labels) != len(args.files):
        sys.exit("--labels needs one label per file")
    fig, grid = plt.subplots(2, 2, figsize=(13, 9))
    ax = [grid[0][0], grid[1][0], grid[1][1], grid[0][1]]  # step, FLOPs, bytes, time
    for path, label in zip(args.files, labels):
        rows = load(path)
        step = [r["step"] for r in rows]
        loss = [r["loss"] for r in rows]
        flops = [flops_of(r) for r in rows]
        seconds, t = [], 0.0
        for r in rows:
            t += r.get("ms", float("nan")) / 1e3
            seconds.append(t)
        line, = ax[0].plot(step, loss, label=f"{label} train")
        ax[1].plot(flops, loss, color=line.get_color(), label=f"{label} train")
        ax[3].plot(seconds, loss, color=line.get_color(), label=f"{label} train")
        val = [(r["step"], flops_of(r), s, r["val_loss"]) for r, s in zip(rows, seconds) if "val_loss" in r]
        if val:
            for a, k in ((ax[0], 0), (ax[1], 1), (ax[3], 2)):
                a.plot([v[k] for v in val], [v[3] for v in val], "o--", color=line.get_color(), label=f"{label} val")
        for axis, style in (("dp", "-"), ("pp", "--"), ("tp", ":")):
            raw = [r["comm"][axis]["raw"] / 1e6 for r in rows]
            sent = [r["comm"][axis]["sent"] / 1e6 for r in rows]
            if any(raw):
                ax[2].plot(step, sent, style, color=line.get_color(), label=f"{label} {axis} sent")
                ax[2].plot(step, raw, style, color=line.get_color(), alpha=0.3, label=f"{label} {axis} raw")
    ax[0].set(xlabel="step", ylabel="loss (nats/byte)", title="loss vs step")
    ax[1].set(xlabel="training FLOPs", ylabel="loss", title="loss vs compute")
    ax[1].set_xscale("log")
    ax[2].set(xlabel="step", ylabel="MB per step (all ranks)", title="bytes per axis")
    ax[3].set(xlabel="training time (s, sum of step times)", ylabel="loss", title="loss vs wall time")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
