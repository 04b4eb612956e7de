#!/usr/bin/python3
"""Validation loss (and BERT's masked-token accuracy) against training FLOPs for the methods
of one bench/msparse/mst_experiment.sh run: OUT/val_vs_flops.png. With a sequence-length
curriculum the points before the switch are validated at the short length (a different
task): they are drawn hollow.

    /usr/bin/python3 bench/msparse/mst_val_plot.py OUTDIR    # reads OUTDIR/<method>.jsonl[.xz]
    /usr/bin/python3 bench/msparse/mst_val_plot.py OUTDIR "mst 80%=OTHER/mst.jsonl" ...
        # adds the curves of other runs' metrics files under their labels
"""
import os
import sys

import matplotlib
import metrics_file

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/msparse/mst_runs"
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    curves = [(m, os.path.join(out, m + ".jsonl")) for m in ["dense", "static", "set", "rigl", "mst"]]
    curves += [tuple(a.split("=", 1)) for a in sys.argv[2:]]
    for m, p in curves:
        if metrics_file.find(p) is None:
            continue
        rows = metrics_file.load(p)
        full = max(x["tokens_per_s"] * x["ms"] for x in rows)  # tokens a step at the longest length
        val = [x for x in rows if "val_loss" in x]
        long_ = [x["tokens_per_s"] * x["ms"] > 0.9 * full for x in val]
        for i, key in enumerate(["val_loss", "val_acc"]):
            if key == "val_acc" and val and val[0].get(key, -1) < 0:
                continue
            f = [x["flops"]["actual"] for x in val]
            y = [x[key] for x in val]
            line, = ax[i].plot(f, y, "-", label=m, alpha=0.8)
            ax[i].plot([a for a, k in zip(f, long_) if k], [b for b, k in zip(y, long_) if k], "o",
                       color=line.get_color(), ms=3)
            ax[i].plot([a for a, k in zip(f, long_) if not k], [b for b, k in zip(y, long_) if not k], "o",
                       mfc="none", color=line.get_color(), ms=3)
    for a, t in zip(ax, ["validation loss", "masked-token accuracy"]):
        a.set_xscale("log")
        a.set_xlabel("training FLOPs (actual, cumulative)")
        a.set_title(t + " vs training FLOPs")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(f"{out}: hollow = validated at the short length of a curriculum", fontsize=9)
    fig.tight_layout()
    dst = os.path.join(out, "val_vs_flops.png")
    fig.savefig(dst, dpi=110)
    print("wrote", dst)


if __name__ == "__main__":
    main()
