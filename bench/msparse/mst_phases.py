#!/usr/bin/python3
"""Per-phase step times of train_gpt metrics files (bench/msparse/mst_experiment.sh output):
for each method, the median and sum of step times over the steps of each phase, split by
whether attention was sparse (HSA) and by tokens per step (a sequence-length curriculum
changes it), and the
method's total against dense (sum of step times, and process CPU seconds where the
experiment script left <method>.cpu).

    /usr/bin/python3 bench/msparse/mst_phases.py OUTDIR [OUTDIR2 ...]   # reads <OUTDIR>/<method>.jsonl[.xz]
"""
import os
import statistics
import sys

import metrics_file


def main():
    for out in sys.argv[1:] or ["bench/msparse/mst_runs"]:
        print(f"## {out}")
        print("| method | phase | attention | tokens/step | steps | median ms | sum s |")
        print("|---|---|---|---:|---:|---:|---:|")
        totals = {}
        for m in ["dense", "static", "set", "rigl", "mst"]:
            p = metrics_file.find(os.path.join(out, m + ".jsonl"))
            if p is None:
                continue
            r = metrics_file.load(p)
            totals[m] = sum(x["ms"] for x in r) / 1e3
            groups = {}
            for x in r:
                tokens = round(x["tokens_per_s"] * x["ms"] / 1e3 / 16) * 16  # B x T, rounded
                key = (x.get("phase", "dense"), "sparse" if x.get("attention_density", 1.0) < 1.0 else "dense", tokens)
                groups.setdefault(key, []).append(x["ms"])
            for (ph, att, tok), ms in groups.items():
                print(f"| {m} | {ph} | {att} | {tok} | {len(ms)} | {statistics.median(ms):.1f} | {sum(ms) / 1e3:.2f} |")
        if "dense" in totals:
            print()
            print("sum of step times: " + " ".join(f"{m} {t:.2f} s ({t / totals['dense']:.2f}x)" for m, t in totals.items()))
            cpu = {}
            for m in totals:
                p = os.path.join(out, m + ".cpu")
                if os.path.exists(p):  # one "user+sys" line per process (two with a curriculum)
                    cpu[m] = sum(float(u) + float(s) for u, s in (w.split("+") for w in open(p).read().split() if "+" in w))
            if "dense" in cpu:
                print("process CPU time: " + " ".join(f"{m} {t:.2f} s ({t / cpu['dense']:.2f}x)" for m, t in cpu.items()))
        print()


if __name__ == "__main__":
    main()
