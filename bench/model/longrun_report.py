#!/usr/bin/python3
"""The report of bench/model/bench_longrun.sh: reads DIR/none_seed<s>.jsonl (the uncompressed
run with each seed) and DIR/<scheme>.jsonl (every other scheme, with the seed given by --seed),
writes DIR/longrun.md and DIR/longrun.png, and prints the table.

    /usr/bin/python3 bench/model/longrun_report.py out/bench-longrun --seed 1337

The noise floor is the range of none's final validation losses over its seeds. A scheme's gap
is its final validation loss minus none's with the same seed; it passes the issue's target when
the gap is at most the floor or 0.5% of none's loss, whichever is larger. Tokens/s is the median
over the steps after the first two (evaluation is not in the step time).
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    if not rows:
        sys.exit(f"longrun_report: {path} holds no metrics")
    return rows


def summary(rows):
    vals = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    if not vals:  # stopped before its first evaluation
        vals = [(0, float("nan"))]
    steady = [r["tokens_per_s"] for r in rows[2:]] or [rows[-1]["tokens_per_s"]]
    return {"val": vals[-1][1], "steps": rows[-1]["step"], "tok_s": statistics.median(steady), "curve": vals,
            "time_s": [sum(r["ms"] for r in rows[:i + 1]) / 1e3 for i in range(len(rows))],
            "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seed", required=True, help="the seed of the compressed schemes' runs")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    seeds = {}
    for f in glob.glob(os.path.join(a.dir, "none_seed*.jsonl")):
        seeds[re.fullmatch(r"none_seed(.+)\.jsonl", os.path.basename(f)).group(1)] = summary(load(f))
    if a.seed not in seeds:
        sys.exit(f"longrun_report: no none_seed{a.seed}.jsonl in {a.dir}")
    if len(seeds) < 2:
        sys.exit("longrun_report: one seed of none gives no noise floor (bench_longrun.sh SEEDS)")
    others = {}
    for f in sorted(glob.glob(os.path.join(a.dir, "*.jsonl"))):
        name = os.path.splitext(os.path.basename(f))[0]
        if not name.startswith("none_seed"):
            others[name] = summary(load(f))
    ref = seeds[a.seed]
    finals = [s["val"] for s in seeds.values()]
    floor = max(finals) - min(finals)
    allowed = max(floor, 0.005 * ref["val"])
    full = max(s["steps"] for s in list(seeds.values()) + list(others.values()))
    short = [k for k, s in seeds.items() if s["steps"] < full]
    if short:
        sys.exit(f"longrun_report: none with seed {short[0]} stopped before step {full}: no noise floor")
    L = [f"{full} steps; none's final validation loss over {len(seeds)} seeds: "
         + ", ".join(f"{s['val']:.4f} (seed {k})" for k, s in sorted(seeds.items(), key=lambda kv: kv[1]["val"]))
         + f"; noise floor (their range) {floor:.4f} ({100 * floor / ref['val']:.2f}%); allowed gap "
         f"max(floor, 0.5%) = {allowed:.4f}.", "",
         "| scheme | final val loss | gap to none | gap % | within the allowed gap | tokens/s | speed-up over none |",
         "|---|---:|---:|---:|---|---:|---:|"]
    L.append(f"| none (seed {a.seed}) | {ref['val']:.4f} | - | - | - | {ref['tok_s']:.0f} | 1.00x |")
    for name, s in others.items():
        if s["steps"] < full:  # train_gpt stopped it (a non-finite loss): no final loss to compare
            L.append(f"| {name} | stopped at step {s['steps'] + 1} (last validation {s['curve'][-1][1]:.4f} at step "
                     f"{s['curve'][-1][0]}) | - | - | no | {s['tok_s']:.0f} | {s['tok_s'] / ref['tok_s']:.2f}x |")
            continue
        gap = s["val"] - ref["val"]
        L.append(f"| {name} | {s['val']:.4f} | {gap:+.4f} | {100 * gap / ref['val']:+.2f}% | "
                 f"{'yes' if gap <= allowed else 'no'} | {s['tok_s']:.0f} | {s['tok_s'] / ref['tok_s']:.2f}x |")
    text = "\n".join(L) + "\n"
    open(os.path.join(a.dir, "longrun.md"), "w").write(text)
    print(text, end="")
    if a.no_plot:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("longrun_report: no matplotlib, no plot", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    curves = [(f"none seed {k}", s, ":" if k != a.seed else "-") for k, s in sorted(seeds.items())]
    curves += [(n, s, "-") for n, s in others.items()]
    for label, s, style in curves:
        xs, ys = zip(*s["curve"])
        ax1.plot(xs, ys, style, marker=".", label=label)
        t = [s["time_s"][x - 1] for x in xs]
        ax2.plot(t, ys, style, marker=".", label=label)
    ax1.set_xlabel("step")
    ax2.set_xlabel("training time (s, evaluation left out)")
    for ax in (ax1, ax2):
        ax.set_ylabel("validation loss")
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.dir, "longrun.png"), dpi=110)


if __name__ == "__main__":
    main()
