#!/usr/bin/python3
"""Summarises bench/msparse/mst_experiment.sh runs: one row per method with the final
validation loss (and BERT's masked-token accuracy), training FLOPs (actual and
dense-equivalent, from train_gpt's metrics), the FLOP reduction, wall and CPU time, and each
against dense.

    /usr/bin/python3 bench/msparse/mst_summary.py OUTDIR    # reads OUTDIR/<method>.jsonl[.xz], wall.txt
"""
import os
import sys

import metrics_file


def cpu_seconds(path):
    """/usr/bin/time -f %U+%S output (user + sys seconds; summed over the lines of a run in
    several processes, e.g. a sequence-length curriculum), or NaN."""
    try:
        lines = [l for l in open(path).read().split() if "+" in l]
        if not lines:
            return float("nan")
        return sum(sum(float(v) for v in l.split("+")) for l in lines)
    except (OSError, ValueError):
        return float("nan")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/msparse/mst_runs"
    wall = {}
    wp = os.path.join(out, "wall.txt")
    if os.path.exists(wp):
        for line in open(wp):
            k, v = line.split()
            wall[k] = float(v)
    order = ["dense", "static", "set", "rigl", "mst"]
    rows = {}
    for m in order:
        p = metrics_file.find(os.path.join(out, m + ".jsonl"))
        if p is None:
            continue
        r = metrics_file.load(p)
        vals = [x for x in r if "val_loss" in x]
        last = r[-1]
        rows[m] = {
            "steps": last["step"],
            "val": vals[-1]["val_loss"] if vals else float("nan"),
            "train": last["loss"],
            "actual": last["flops"]["actual"],
            "dense": last["flops"]["dense"],
            "step_s": sum(x["ms"] for x in r) / 1e3,
            "wall": wall.get(m, float("nan")),
            "density": last.get("density", 1.0),
            "avg_density": sum(x.get("density", 1.0) for x in r) / len(r),
            "acc": vals[-1].get("val_acc") if vals else None,
            "cpu": cpu_seconds(os.path.join(out, m + ".cpu")),
        }
    if not rows:
        sys.exit(f"no metrics in {out}")
    ref = rows.get("dense")
    acc = any(x["acc"] is not None for x in rows.values())  # BERT: masked-token accuracy
    print("| method | steps | final val loss | vs dense | " + ("val masked-token acc | " if acc else "") +
          "train FLOPs (actual) | dense-equivalent | FLOP reduction | mean density | wall s | "
          "sum of step times s | wall vs dense | CPU s | CPU vs dense |")
    print("|---" * (14 if acc else 13) + "|")
    for m, x in rows.items():
        dv = f"{(x['val'] / ref['val'] - 1) * 100:+.2f}%" if ref else "-"
        dw = f"{x['wall'] / ref['wall']:.2f}x" if ref and ref["wall"] == ref["wall"] else "-"
        dc = f"{x['cpu'] / ref['cpu']:.2f}x" if ref and ref["cpu"] == ref["cpu"] else "-"
        a = (f"{x['acc']:.4f} | " if x["acc"] is not None else "- | ") if acc else ""
        print(f"| {m} | {x['steps']} | {x['val']:.4f} | {dv} | {a}{x['actual']:.3e} | {x['dense']:.3e} | "
              f"{x['dense'] / x['actual']:.2f}x | {x['avg_density']:.3f} | {x['wall']:.1f} | {x['step_s']:.1f} | {dw} | "
              f"{x['cpu']:.1f} | {dc} |")

if __name__ == "__main__":
    main()
