#!/usr/bin/env python3
"""The table of bench/comm/real_tensors.sh: per tensor x codec, the ratio, the relative error,
the rate and the speed-up over MPI's own operation on the real tensor, smooth and random data.

    python3 bench/comm/real_tensors_table.py bench/comm/results-20261202-real-tensors-medium-1gbit.jsonl

Takes the file's last run (its "date" stamp) unless --date STAMP names another. Ratio and error
are the same in every round (checked); GB/s is the median over the rounds of each run's median
iteration; "vs MPI" the median over the rounds of the codec's rate / MPI's rate in the same
round on the same data. Every row must be bitwise identical on all ranks (checked).
"""
import argparse
import json
import statistics
from collections import defaultdict

KINDS = ("real", "smooth", "random")


def kind(r):
    return r["data"] if r["data"] in ("smooth", "random") else "real"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("--date", help="the run's stamp (default: the file's last)")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.jsonl) if l.startswith("{")]
    stamp = a.date or rows[-1]["date"]
    rows = [r for r in rows if r["date"] == stamp]
    cells, mpi, order = defaultdict(list), {}, []
    for r in rows:
        cells[(r["tensor"], r["codec"], kind(r))].append(r)
        if r["codec"] == "mpi":
            mpi[(r["tensor"], kind(r), r["rep"])] = r["algbw_gbs"]
        if (r["tensor"], r["codec"]) not in order:
            order.append((r["tensor"], r["codec"]))
    link = rows[0]["link"]
    rate = "GB/s" + ("" if link == "shm" else " at " + link)
    print("%s, %s: rows %d" % (stamp, link, len(rows)))
    print("| tensor (KiB/rank, op) | codec | ratio: real / smooth / random | rel error: real / smooth / random "
          "| %s: real / smooth / random | vs MPI: real / smooth / random |" % rate)
    print("|---|---|---|---|---|---|")
    last = None
    for t, c in order:
        cs = [cells[(t, c, k)] for k in KINDS]
        for x in cs:
            assert x and all(y["identical"] in (True, None) for y in x), (t, c, "not identical")
            assert len({y["ratio"] for y in x}) == 1 and len({y["rel_error"] for y in x}) == 1, (t, c)
        ratio = " / ".join("%.3g" % x[0]["ratio"] for x in cs)
        err = " / ".join("0" if x[0]["rel_error"] == 0 else "%.2g" % x[0]["rel_error"] for x in cs)
        gbs = " / ".join("%.3g" % statistics.median(y["algbw_gbs"] for y in x) for x in cs)
        vs = " / ".join("%.2fx" % statistics.median(y["algbw_gbs"] / mpi[(t, k, y["rep"])] for y in x)
                        for x, k in zip(cs, KINDS))
        name = "" if t == last else "%s (%g, %s)" % (t, cs[0][0]["bytes"] / 1024, cs[0][0]["op"])
        last = t
        print("| %s | %s | %s | %s | %s | %s |" % (name, c, ratio, err, gbs, "-" if c == "mpi" else vs))


if __name__ == "__main__":
    main()
