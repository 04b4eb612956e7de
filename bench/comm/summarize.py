#!/usr/bin/env python3
"""Table of hcomm-collective JSON lines: time, speed-up over MPI's own collective, and the
ratio to the ideal (MPI's time divided by the compression ratio: what a free codec would give).

Each result is compared with MPI's run of the same cell (link, ranks, op, bytes) in the same
round of the same run (hcomm-collective --rounds N measures every codec and MPI once per round,
next to each other in time). Where a cell has several rounds, a second table gives the median,
lowest and highest of the per-round speed-ups: on a noisy link that, not one pair of runs, is
the figure to quote.

    python3 bench/comm/summarize.py bench/comm/results-*.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def cell(r):
    return (r.get("link", "shm"), r["ranks"], r["op"], r["bytes"])


def label(r):  # the codec, and Open MPI's allreduce algorithm where the run forced one
    alg = r.get("mpi_allreduce_alg", "default")
    return r["codec"] if alg == "default" else "{} (ompi alg {})".format(r["codec"], alg)


def run_of(r):  # one hcomm-collective run: its start stamp (netns-bench adds it) and round
    return (r.get("date", ""), r.get("round", 0))


def main(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(l) for l in f if l.startswith("{")]
    base = {}
    for r in rows:
        if r["codec"] == "mpi":
            base[cell(r) + run_of(r)] = r["seconds"]
    groups = defaultdict(list)
    for r in rows:
        groups[cell(r)].append(r)
    print("| link | ranks | op | MiB | codec | round | seconds | MB/s | vs MPI | ratio | ideal s | of ideal | codec s | rel err | identical |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    speedups = defaultdict(list)
    for key in sorted(groups):
        link, ranks, op, nbytes = key
        for r in groups[key]:
            b = base.get(key + run_of(r))
            s = r["seconds"]
            ideal = b / r["ratio"] if b else None
            if b and s and r["codec"] != "mpi":
                speedups[key + (label(r),)].append(b / s)
            print("| {} | {} | {} | {:g} | {} | {} | {:.4g} | {:.0f} | {} | {:.2f} | {} | {} | {:.3g} | {:.2g} | {} |".format(
                link, ranks, op, nbytes / 2**20, label(r), r.get("round", 0), s, nbytes / s / 1e6 if s else 0,
                "{:.2f}x".format(b / s) if b and s else "-", r["ratio"],
                "{:.3g}".format(ideal) if ideal else "-", "{:.0%}".format(ideal / s) if ideal and s else "-",
                r.get("codec_seconds", 0), r["rel_error"],
                {True: "yes", False: "NO", None: "-"}[r["identical"]]))
    multi = {k: v for k, v in speedups.items() if len(v) > 1}
    if multi:
        print()
        print("| link | ranks | op | MiB | codec | rounds | vs MPI median | lowest | highest |")
        print("|---|---|---|---|---|---|---|---|---|")
        for k in sorted(multi):
            v = multi[k]
            link, ranks, op, nbytes, codec = k
            print("| {} | {} | {} | {:g} | {} | {} | {:.2f}x | {:.2f}x | {:.2f}x |".format(
                link, ranks, op, nbytes / 2**20, codec, len(v), statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main(sys.argv[1:])
