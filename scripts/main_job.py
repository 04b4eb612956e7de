#!/usr/bin/python3
"""The numbers of the main job (scripts/run-main.sh) from train_gpt --metrics files.

    main_job.py rate --metrics cal.jsonl --grid 2x2x2 --nodes 4 --ranks-per-node 2
    main_job.py summary --scheme zhybrid:16,8 --metrics main.jsonl --none none.jsonl \\
        [--compute-ms 460] [--rate 40200kbit] [--axes "grid 2x2x2: TP: inside nodes; ..."] \\
        [--raw-note "hcomm: --compress-inside-node off: ..."] [--everywhere everywhere.jsonl] \\
        [--also mzhybrid:8=also.jsonl]

`rate`: from an uncompressed run over shared memory, the compute of a step (median ms of
steps 3.., the first two set things up) and the bytes per step that cross nodes (the sent
bytes of the axes that scripts/grid-axes.sh says cross nodes, summed over all ranks, divided
by the nodes: what each node's link carries each way, the grid being symmetric); prints them
and the link rate at which sending those bytes takes as long as the compute step, so that the
uncompressed step spends about half its time in exposed communication. Its last two lines
are `compute_ms=<ms>` and `rate=<R>kbit`.

`summary`: the two runs side by side: tokens/s and median step (steps 3..), the speed-up
(given --rate, against the target of 1.3x), the final validation losses and their gap against the target (0.5% of none's), the bytes per
step of each axis (raw -> sent, all ranks), the compressed run's codec time per step and axis
(median; encoding and decoding on the slowest rank), and, given --compute-ms, the uncompressed
step as a multiple of the compute step. --raw-note (train_gpt's line saying which axes went
uncompressed because they stay inside a node) is printed under the speed-up; --everywhere, the
same scheme run with every axis compressed, adds its tokens/s, speed-up and loss gap; each
--also SCHEME=FILE the same for another scheme with every axis compressed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AXES = ("dp", "pp", "tp")
LOSS_TOLERANCE = 0.005  # the target's floor: final validation loss within 0.5% of none's
SPEEDUP_TARGET = 1.3    # the target on the calibrated links: tokens/s at least 1.3x none's


def die(msg):
    print(f"main_job: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    rows = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        die(f"{path}:{n}: not a JSON line ({e})")
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    if not rows:
        die(f"{path}: no steps (did train_gpt run?)")
    for r in rows:
        if not all(k in r for k in ("step", "ms", "tokens_per_s", "comm")):
            die(f"{path}: step {r.get('step', '?')} lacks ms, tokens_per_s or comm: not train_gpt --metrics output")
    return rows


def steady(rows):
    """The steps after the first two (connections, first-touch allocations), or all if few."""
    return rows[2:] if len(rows) > 2 else rows


def median_of(rows, key):
    """The median of key(row) over the steady steps; None if a row lacks it."""
    vals = [key(r) for r in steady(rows)]
    return None if not vals or any(v is None for v in vals) else statistics.median(vals)


def median_ms(rows):
    return statistics.median(r["ms"] for r in steady(rows))


def tokens_per_s(rows):
    s = steady(rows)
    tokens = sum(r["tokens_per_s"] * r["ms"] / 1e3 for r in s)
    return tokens / (sum(r["ms"] for r in s) / 1e3)


def final_val(rows, path):
    vals = [r["val_loss"] for r in rows if "val_loss" in r]
    if not vals:
        die(f"{path}: no validation loss")
    return vals[-1]


def steps_label(rows):
    s = steady(rows)
    return f"steps {s[0]['step']}-{s[-1]['step']}"


def crossing_axes(grid, rpn):
    try:
        out = subprocess.run([os.path.join(HERE, "grid-axes.sh"), "--grid", grid, "--ranks-per-node", str(rpn)],
                             check=True, capture_output=True, text=True).stdout.strip()
    except subprocess.CalledProcessError as e:
        die(e.stderr.strip() or f"grid-axes.sh failed (exit {e.returncode})")
    crossing = [a.lower() for a, verdict in (p.split(": ", 1) for p in out.split("; ")) if verdict.startswith("crosses")]
    return out, crossing


def cmd_rate(args):
    if args.nodes < 1 or args.ranks_per_node < 1:
        die("--nodes and --ranks-per-node must be positive")
    rows = load(args.metrics)
    compute_ms = median_ms(rows)
    if compute_ms <= 0:
        die(f"{args.metrics}: step times are not positive")
    axes_line, crossing = crossing_axes(args.grid, args.ranks_per_node)
    last = rows[-1]["comm"]
    if any(last[a]["sent"] < last[a]["raw"] for a in AXES):
        die(f"{args.metrics}: a compressed run (fewer bytes sent than raw): calibrate with --scheme none")
    total = sum(last[a]["sent"] for a in crossing)
    per_node = total / args.nodes
    print(f"calibration: compute step {compute_ms:.1f} ms (median of {steps_label(rows)}, uncompressed, shared memory)")
    print(f"calibration: grid {args.grid}, {args.ranks_per_node} ranks per node: {axes_line}")
    if not crossing or per_node <= 0:
        die(f"no bytes cross nodes on grid {args.grid} with {args.ranks_per_node} ranks per node: nothing to calibrate")
    detail = " + ".join(f"{a} {last[a]['sent'] / 1e6:.3f}" for a in crossing)
    print(f"calibration: bytes crossing nodes per step {total / 1e6:.3f} MB ({detail}, all ranks), "
          f"{per_node / 1e6:.3f} MB per node link each way")
    kbit = max(1, round(per_node * 8 / (compute_ms / 1e3) / 1e3))
    print(f"calibration: link rate {kbit / 1e3:.1f} Mbit/s: {per_node / 1e6:.3f} MB take {compute_ms:.0f} ms, "
          f"the compute step")
    print(f"compute_ms={compute_ms:.1f}")
    print(f"rate={kbit}kbit")


def cmd_summary(args):
    a, b = load(args.metrics), load(args.none)
    if len(a) != len(b):
        die(f"{args.metrics} has {len(a)} steps, {args.none} {len(b)}: not the same run length")
    name = args.scheme
    runs = [(name, args.everywhere)] if args.everywhere else []  # every axis compressed
    for spec in args.also or []:
        other, sep, path = spec.partition("=")
        if not sep or not other or not path:
            die(f"--also '{spec}': wants SCHEME=FILE")
        runs.append((other, path))
    every = []
    for label, path in runs:
        e = load(path)
        if len(e) != len(b):
            die(f"{path} has {len(e)} steps, {args.none} {len(b)}: not the same run length")
        every.append((label, path, e))
    ta, tb = tokens_per_s(a), tokens_per_s(b)
    ma, mb = median_ms(a), median_ms(b)
    va, vb = final_val(a, args.metrics), final_val(b, args.none)
    gap = va - vb
    w = max(len(name), len("none"))
    print(f"summary: {len(a)} steps each; tokens/s and median step over {steps_label(a)}")
    extra = ""
    if args.compute_ms:
        extra = f" = {mb / args.compute_ms:.2f}x the compute step ({args.compute_ms:.0f} ms)"
    print(f"summary: {name:<{w}}  {ta:8.0f} tokens/s  {ma:8.1f} ms/step  final val loss {va:.4f}")
    print(f"summary: {'none':<{w}}  {tb:8.0f} tokens/s  {mb:8.1f} ms/step  final val loss {vb:.4f}{extra}")
    target = ""
    if args.rate:  # on rate-limited links: the main job's target
        target = f" (target at least {SPEEDUP_TARGET}x: {'met' if ta / tb >= SPEEDUP_TARGET else 'not met'})"
    print(f"summary: speed-up {name} / none: {ta / tb:.2f}x tokens/s{target}")
    if args.raw_note:
        print(f"summary: {name} as run: {args.raw_note.removeprefix('hcomm: ')}")
    within = abs(gap) <= LOSS_TOLERANCE * vb
    print(f"summary: val loss gap {name} - none: {gap:+.5f} ({100 * gap / vb:+.4f}%), "
          f"{'within' if within else 'outside'} 0.5% of none's ({LOSS_TOLERANCE * vb:.4f})")
    for label, rows in ((name, a), ("none", b)):
        c = rows[-1]["comm"]
        parts = ", ".join(f"{x} {c[x]['raw'] / 1e6:.3f}->{c[x]['sent'] / 1e6:.3f}" for x in AXES)
        print(f"summary: MB per step raw->sent (all ranks), {label:<{w}}: {parts}")
    codec = {x: median_of(a, lambda r: r["comm"][x].get("codec_ms")) for x in AXES}
    if all(v is not None for v in codec.values()):
        parts = ", ".join(f"{x} {codec[x]:.1f}" for x in AXES)
        print(f"summary: codec ms per step (encoding and decoding, the slowest rank), {name}: {parts}")
    for label, path, e in every:
        te, ve = tokens_per_s(e), final_val(e, path)
        target = ""
        if args.rate:
            target = f" (target {'met' if te / tb >= SPEEDUP_TARGET else 'not met'})"
        print(f"summary: {label} on every axis (inside nodes too): {te:.0f} tokens/s, {median_ms(e):.1f} ms/step, "
              f"{te / tb:.2f}x none{target}, final val loss {ve:.4f} ({100 * (ve - vb) / vb:+.4f}% of none's)")
    if args.rate:
        print(f"summary: links of {args.rate} each way")
    if args.axes:
        print(f"summary: {args.axes}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rate", help="the link rate from an uncompressed shared-memory run")
    r.add_argument("--metrics", required=True)
    r.add_argument("--grid", required=True, help="TPxDPxPP")
    r.add_argument("--nodes", type=int, required=True)
    r.add_argument("--ranks-per-node", type=int, required=True)
    s = sub.add_parser("summary", help="a scheme against none")
    s.add_argument("--scheme", required=True)
    s.add_argument("--metrics", required=True, help="the scheme's --metrics file")
    s.add_argument("--none", required=True, help="the uncompressed run's --metrics file")
    s.add_argument("--compute-ms", type=float, help="the compute step of the calibration")
    s.add_argument("--rate", help="the link rate, printed")
    s.add_argument("--axes", help="where the runs ran (e.g. grid-axes.sh's line), printed last")
    s.add_argument("--raw-note", help="train_gpt's line on the axes sent raw inside nodes, printed")
    s.add_argument("--everywhere", help="the scheme's --metrics file with every axis compressed")
    s.add_argument("--also", action="append", metavar="SCHEME=FILE",
                   help="another scheme's --metrics file with every axis compressed (repeatable)")
    args = ap.parse_args()
    (cmd_rate if args.cmd == "rate" else cmd_summary)(args)


if __name__ == "__main__":
    main()
