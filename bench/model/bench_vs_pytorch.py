#!/usr/bin/python3
"""train_gpt against PyTorch on the same model, batch and thread count: median ms per
training step (forward, backward, clip, AdamW), 1 rank, no MPI traffic.

    /usr/bin/python3 bench/model/bench_vs_pytorch.py --train-gpt build/examples/gpt/train_gpt \
        --models tiny,small --threads 1,2 --steps 12 --repeats 2

Runs alternate (ours, PyTorch, ours, ...) so that load from other processes hits both alike;
each prints the median over steps 3.. of every run, and the best run's median. The machine
and its load are printed with the numbers: on a shared machine they are only comparable
side by side.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The presets both programs know (examples/gpt/config.hpp, scripts/reference_gpt.py's PRESETS).
MODELS = ("tiny", "small", "medium")


def run(cmd, env):
    """Runs cmd; on failure exits naming the command, with the end of its output."""
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
        sys.exit(f"bench_vs_pytorch: {' '.join(cmd)} exited {r.returncode}:\n{tail}")
    return r.stdout


def ours(exe, model, arch, threads, steps, data):
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        path = f.name
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    cmd = [exe, "--model", model, "--arch", arch, "--steps", str(steps), "--threads", str(threads), "--data", data,
           "--sample", "0", "--quiet", "--eval-batches", "1", "--metrics", path, "--scheme", "plain"]
    run(cmd, env)
    rows = [json.loads(line) for line in open(path)]
    os.unlink(path)
    return statistics.median(r["ms"] for r in rows[2:])


def pytorch(model, arch, threads, steps, data):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "reference_gpt.py"), "--bench", "--model",
               model, "--arch", arch, "--threads", str(threads), "--steps", str(steps), "--data", data], env)
    m = re.search(r"median ms/step ([0-9.]+)", out)
    if not m:
        sys.exit(f"bench_vs_pytorch: scripts/reference_gpt.py printed no 'median ms/step': {out.strip()}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-gpt", default=os.path.join(ROOT, "build", "examples", "gpt", "train_gpt"))
    ap.add_argument("--models", default="tiny,small")
    ap.add_argument("--arch", default="gpt2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "kjv.txt"))
    args = ap.parse_args()
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"--models: unknown preset '{m}' (known to both programs: {', '.join(MODELS)})")
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads '{args.threads}' is not a comma-separated list of counts")
    if any(t < 1 for t in threads):
        ap.error("--threads: counts start at 1")
    if args.steps < 3 or args.repeats < 1:
        ap.error("--steps must be at least 3 (the median is over steps 3..) and --repeats at least 1")
    if not os.access(args.train_gpt, os.X_OK):
        sys.exit(f"no train_gpt at {args.train_gpt} (build the train_gpt target, or pass --train-gpt)")
    print(f"# {os.uname().nodename}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at start")
    print("| model | arch | threads | train_gpt ms/step (runs) | PyTorch ms/step (runs) | PyTorch / ours |")
    print("|---|---|---|---|---|---|")
    for model in models:
        for th in threads:
            a, b = [], []
            for _ in range(args.repeats):
                a.append(ours(args.train_gpt, model, args.arch, th, args.steps, args.data))
                b.append(pytorch(model, args.arch, th, args.steps, args.data))
            print(f"| {model} | {args.arch} | {th} | {min(a):.1f} ({', '.join(f'{x:.1f}' for x in a)}) | "
                  f"{min(b):.1f} ({', '.join(f'{x:.1f}' for x in b)}) | {min(b) / min(a):.2f} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
