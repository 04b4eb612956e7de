#!/usr/bin/python3
"""PyTorch's step time for the dense BERT encoder that train_gpt --arch bert trains: the speed
anchor of bench/msparse/mst_experiment.sh's BERT runs. The model is scripts/reference_bert.py's
(the one the C++ tests are checked against), at a train_gpt preset's shape, trained on
data/kjv.txt with the same whole-word masking; one step = forward, backward, gradient clipping
and AdamW, as train_gpt's. Prints the median and range of the step times.

    /usr/bin/python3 bench/msparse/bert_pytorch_step.py                 # bert-small, 1 thread
    /usr/bin/python3 bench/msparse/bert_pytorch_step.py --threads 2 --steps 20

Run it with the same thread count as train_gpt (the experiment runs OMP_NUM_THREADS=1).
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import openblas_core  # noqa: E402

openblas_core.match_cpu()  # OpenBLAS's kernels for this CPU (may restart): before torch loads it
import torch  # noqa: E402

from reference_bert import CLS, SEP, VOCAB, Bert, mlm_mask, train_step  # noqa: E402
from reference_gpt import make_optimizer  # noqa: E402

# examples/gpt/config.hpp's presets (the fields this model uses)
PRESETS = {
    "bert-tiny": dict(L=2, C=64, NH=4, T=32, B=8, lr=1e-3),
    "bert-small": dict(L=4, C=256, NH=4, T=128, B=16, lr=5e-4),
    "bert-base": dict(L=12, C=768, NH=12, T=512, B=32, lr=1e-4),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="bert-small", choices=sorted(PRESETS))
    ap.add_argument("--steps", type=int, default=12, help="timed steps (after --warmup untimed ones)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "kjv.txt"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    p = PRESETS[a.model]
    cfg = dict(V=VOCAB, post_ln=True, mask_rate=0.15, mask_seed=1234, steps=a.steps + a.warmup, warmup=1,
               min_lr_frac=0.1, wd=0.1, beta1=0.9, beta2=0.95, eps=1e-8, clip=1.0, **p)
    data = open(a.data, "rb").read()
    B, T = p["B"], p["T"]
    model = Bert(cfg)
    opt = make_optimizer(model, cfg)
    times = []
    for step in range(a.warmup + a.steps):
        x, y = [], []
        for i in range(B):
            off = ((step * B + i) * (T - 2) * 7919) % (len(data) - T)
            tok = [CLS] + list(data[off:off + T - 2]) + [SEP]
            y.append(mlm_mask(tok, cfg["mask_rate"], cfg["mask_seed"], step * B + i))
            x.append(tok)
        x, y = torch.tensor(x), torch.tensor(y)
        t0 = time.perf_counter()
        train_step(model, opt, cfg, step, x, y)
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"pytorch {torch.__version__} {a.model} (L{p['L']} C{p['C']} NH{p['NH']} T{T} B{B}), {a.threads} thread(s): "
          f"step median {statistics.median(times):.1f} ms, min {min(times):.1f}, max {max(times):.1f} "
          f"over {len(times)} steps; {openblas_core.describe()}")


if __name__ == "__main__":
    main()
