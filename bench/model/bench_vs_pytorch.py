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


def ours(exe, model, arch, threads, steps, data):
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        path = f.name
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    cmd = [exe, "--model", model, "--arch", arch, "--steps", str(steps), "--threads", str(threads), "--data", data,
           "--sample", "0", "--quiet", "--eval-batches", "1", "--metrics", path, "--scheme", "plain"]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    rows = [json.loads(line) for line in open(path)]
    os.unlink(path)
    return statistics.median(r["ms"] for r in rows[2:])


def pytorch(model, arch, threads, steps, data):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "reference_gpt.py"), "--bench", "--model",
                          model, "--arch", arch, "--threads", str(threads), "--steps", str(steps), "--data", data],
                         check=True, env=env, capture_output=True, text=True).stdout
    return float(re.search(r"median ms/step ([0-9.]+)", out).group(1))


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
    if not os.access(args.train_gpt, os.X_OK):
        sys.exit(f"no train_gpt at {args.train_gpt} (build the train_gpt target, or pass --train-gpt)")
    print(f"# {os.uname().nodename}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at start")
    print("| model | arch | threads | train_gpt ms/step (runs) | PyTorch ms/step (runs) | PyTorch / ours |")
    print("|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for th in (int(t) for t in args.threads.split(",")):
            a, b = [], []
            for _ in range(args.repeats):
                a.append(ours(args.train_gpt, model, args.arch, th, args.steps, args.data))
                b.append(pytorch(model, args.arch, th, args.steps, args.data))
            print(f"| {model} | {args.arch} | {th} | {min(a):.1f} ({', '.join(f'{x:.1f}' for x in a)}) | "
                  f"{min(b):.1f} ({', '.join(f'{x:.1f}' for x in b)}) | {min(b) / min(a):.2f} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
