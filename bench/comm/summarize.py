#!/usr/bin/env python3
"""Table of hcomm-collective JSON lines: time, speed-up over MPI's own collective, and the
ratio to the ideal (MPI's time divided by the compression ratio: what a free codec would give).

    python3 bench/comm/summarize.py bench/comm/results-*.jsonl
"""
import json
import sys
from collections import defaultdict


def main(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(l) for l in f if l.startswith("{")]
    base = {}
    for r in rows:
        if r["codec"] == "mpi":
            base[(r.get("link", "shm"), r["ranks"], r["op"], r["bytes"])] = r["seconds"]
    groups = defaultdict(list)
    for r in rows:
        groups[(r.get("link", "shm"), r["ranks"], r["op"], r["bytes"])].append(r)
    print("| link | ranks | op | MiB | codec | seconds | MB/s | vs MPI | ratio | ideal s | of ideal | codec s | rel err | identical |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3])):
        link, ranks, op, nbytes = key
        b = base.get(key)
        for r in groups[key]:
            s = r["seconds"]
            ideal = b / r["ratio"] if b else None
            print("| {} | {} | {} | {:g} | {} | {:.4g} | {:.0f} | {} | {:.2f} | {} | {} | {:.3g} | {:.2g} | {} |".format(
                link, ranks, op, nbytes / 2**20, r["codec"], s, nbytes / s / 1e6 if s else 0,
                "{:.2f}x".format(b / s) if b and s else "-", r["ratio"],
                "{:.3g}".format(ideal) if ideal else "-", "{:.0%}".format(ideal / s) if ideal and s else "-",
                r.get("codec_seconds", 0), r["rel_error"],
                {True: "yes", False: "NO", None: "-"}[r["identical"]]))


if __name__ == "__main__":
    main(sys.argv[1:])
