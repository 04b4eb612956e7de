#!/usr/bin/env python3
"""Runs a train_gpt command with --uncompressed-axes and checks what it did: rank 0's line
naming the uncompressed and the compressed axes, and in its --metrics file, over all steps,
every RAW axis sending exactly its raw bytes and every COMPRESSED axis sending at most
two thirds of them.

  check_uncompressed_axes.py METRICS RAW[,RAW..] COMPRESSED[,..] -- COMMAND...

(the command's --scheme is zhybrid:16,8)
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit(__doc__)
    metrics, raw, kept, cmd = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[5:]
    run = subprocess.run(cmd, capture_output=True, text=True)
    print(run.stdout + run.stderr)
    if run.returncode != 0:
        sys.exit(f"check_uncompressed_axes: the run exited {run.returncode}")
    line = (f"hcomm: --uncompressed-axes: uncompressed: {', '.join(raw)}; "
            f"compressed by zhybrid:16,8: {', '.join(kept)}")
    if line not in run.stdout.splitlines():
        sys.exit(f"check_uncompressed_axes: no line '{line}'")
    rows = [json.loads(l) for l in open(metrics)]
    for ax in raw + kept:
        r = sum(row["comm"][ax]["raw"] for row in rows)
        s = sum(row["comm"][ax]["sent"] for row in rows)
        ok = r > 0 and (s == r if ax in raw else s <= r * 2 / 3)
        print(f"check_uncompressed_axes: {ax}: {s:.0f} bytes sent of {r:.0f} raw "
              f"({'uncompressed' if ax in raw else 'compressed'}: {'ok' if ok else 'WRONG'})")
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
