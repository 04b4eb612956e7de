#!/usr/bin/python3
"""Checks train_gpt's --kernel-times table: runs the command after `--` (which has
--kernel-times) and the same command without it, then checks that
  - the losses of every step are the same bits in both runs (--losses-out, 17 digits: timing
    changes nothing);
  - the table counts the run's steps but the first, names the expected kernels with the
    expected calls per step (--expect NAME=CALLS), and its rows add up: the kernels' sum is
    at most the step, "rest" is the step minus that sum, the shares match the times.

    check_kernel_times.py --steps 3 --expect gemm_fwd=9 -- mpiexec -n 1 train_gpt ... --kernel-times
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"exit {p.returncode}: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def losses(path):
    with open(path) as f:
        return f.read().split("\n")[:-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True, help="steps the table should count")
    ap.add_argument("--expect", action="append", default=[], help="NAME=CALLS per step")
    ap.add_argument("--where", default="rank 0 of", help="text the table's first line names")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    tmp = tempfile.mkdtemp()
    ft, fp = os.path.join(tmp, "timed.txt"), os.path.join(tmp, "plain.txt")
    timed = run(cmd + ["--losses-out", ft])
    run([c for c in cmd if c != "--kernel-times"] + ["--losses-out", fp])
    print(timed)
    bad = []
    lt, lp = losses(ft), losses(fp)
    if not lt or lt != lp:
        bad.append(f"losses differ with --kernel-times: {lt} vs {lp}")
    head = re.search(r"^kernel times, (.*), per step over (\d+) step\(s\) \((.*)\):$", timed, re.M)
    if not head:
        sys.exit("FAIL: no kernel-times table")
    if a.where not in head.group(1):
        bad.append(f"table is for '{head.group(1)}', expected '{a.where}'")
    if int(head.group(2)) != a.steps:
        bad.append(f"table counts {head.group(2)} steps, expected {a.steps}")
    rows = {}
    for m in re.finditer(r"^  (\S+(?: \S+)*?) +(\d+\.\d)? +(-?\d+\.\d{3}) +(-?\d+\.\d)%$", timed[head.end():], re.M):
        rows[m.group(1)] = (float(m.group(2)) if m.group(2) else None, float(m.group(3)), float(m.group(4)))
    for need in ("all kernels", "rest (comm, host, gaps)", "step"):
        if need not in rows:
            bad.append(f"no '{need}' row")
    if not bad:
        kernels = {k: v for k, v in rows.items() if v[0] is not None}
        step, total, rest = rows["step"][1], rows["all kernels"][1], rows["rest (comm, host, gaps)"][1]
        if abs(sum(v[1] for v in kernels.values()) - total) > 0.002 * len(kernels) + 1e-3:
            bad.append(f"kernel rows add up to {sum(v[1] for v in kernels.values()):.3f}, 'all kernels' says {total}")
        if not 0 < total <= step + 1e-3:
            bad.append(f"all kernels {total} ms not within the step's {step} ms")
        if abs(step - total - rest) > 2e-3:
            bad.append(f"rest {rest} is not step {step} - kernels {total}")
        for k, (calls, ms, share) in kernels.items():
            if step > 0 and abs(100 * ms / step - share) > 0.1 + 1e-9:
                bad.append(f"{k}: share {share}% is not {ms}/{step}")
        for e in a.expect:
            name, calls = e.split("=")
            if name not in kernels:
                bad.append(f"no row for {name}")
            elif kernels[name][0] != float(calls):
                bad.append(f"{name}: {kernels[name][0]} calls per step, expected {calls}")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"kernel-times table OK: {len(rows) - 3} kernels, losses unchanged over {len(lt)} steps")


if __name__ == "__main__":
    main()
