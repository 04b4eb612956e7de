#!/usr/bin/python3
"""Trains the dense BERT encoder of train_gpt --arch bert in PyTorch on the same batches, as a
learning check for train_gpt's MLM runs: scripts/reference_bert.py's model (the one the C++
tests are checked against), train_gpt's initialisation (params.hpp: normal(0, 0.02) weights,
zero biases, unit LayerNorm gains), its AdamW, warm-up and cosine schedule, and mlm.hpp's data:
the same training windows at the same cursor, the same whole-word masks (seed and global
sample index), the same validation batches. Prints lines in train_gpt's format
("step  k/n   val L acc A") so the two curves can be laid side by side.

    /usr/bin/python3 bench/msparse/bert_pytorch_train.py --steps 1000 --eval-every 100
    /usr/bin/python3 bench/msparse/bert_pytorch_train.py --pre-ln --lr 1e-3 --warmup 100

The weights are drawn from PyTorch's RNG, not train_gpt's, so the curves agree in
distribution, not bit for bit.
"""
import argparse
import math
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import openblas_core  # noqa: E402

openblas_core.match_cpu()  # OpenBLAS's kernels for this CPU (may restart): before torch loads it
import torch  # noqa: E402

from reference_bert import CLS, MASK, SEP, VOCAB, Bert, mlm_mask, train_step  # noqa: E402
from reference_gpt import make_optimizer  # noqa: E402

from bert_pytorch_step import PRESETS  # noqa: E402  (config.hpp's BERT presets)



def init_as_train_gpt(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
            elif "ln" in name and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()


class Corpus:
    """mlm.hpp's windows over data.hpp's split: the last val_frac of the file is validation."""

    def __init__(self, path, T, whole_words, val_frac=0.1):
        self.whole_words = whole_words
        self.bytes = open(path, "rb").read()
        n = len(self.bytes)
        self.val_len = max(int(n * val_frac), 2 * (T + 1))
        self.train_len = n - self.val_len
        self.T = T

    def sequence(self, base, length, pos, rate, seed, index):
        T = self.T
        start = base + pos % (length - T - 1)
        tok = [CLS] + list(self.bytes[start:start + T - 2]) + [SEP]
        tgt = mlm_mask(tok, rate, seed, index, self.whole_words)
        return tok, tgt

    def train_batch(self, step, B, rate, seed):
        cursor = step * B * self.T
        xs, ys = [], []
        for g in range(B):
            x, y = self.sequence(0, self.train_len, cursor + g * self.T, rate, seed, cursor // self.T + g)
            xs.append(x)
            ys.append(y)
        return torch.tensor(xs), torch.tensor(ys)

    def val_batch(self, v, B, rate, seed):
        xs, ys = [], []
        for g in range(B):
            i = v * B + g
            x, y = self.sequence(self.train_len, self.val_len, i * self.T, rate, seed, (1 << 62) + i)
            xs.append(x)
            ys.append(y)
        return torch.tensor(xs), torch.tensor(ys)


def evaluate(model, corpus, cfg, batches):
    """Validation loss and accuracy over the predicted positions, and the accuracy over those
    whose input is [MASK] and over the others (kept or replaced by a random byte)."""
    loss_sum, hits, n, hits_m, n_m = 0.0, 0, 0, 0, 0
    with torch.no_grad():
        for v in range(batches):
            x, y = corpus.val_batch(v, cfg["B"], cfg["rate"], cfg["mask_seed"])
            logits, _ = model(x, y)
            keep = y >= 0
            lg, t = logits[keep], y[keep]
            loss_sum += torch.nn.functional.cross_entropy(lg, t, reduction="sum").item()
            right = lg.argmax(dim=-1) == t
            masked = x[keep] == MASK
            hits += int(right.sum())
            hits_m += int((right & masked).sum())
            n += int(keep.sum())
            n_m += int(masked.sum())
    return loss_sum / n, hits / n, hits_m / max(n_m, 1), (hits - hits_m) / max(n - n_m, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="bert-small", choices=sorted(PRESETS))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batches", type=int, default=2)
    ap.add_argument("--lr", type=float, default=None, help="default: the preset's")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pre-ln", action="store_true")
    ap.add_argument("--mask-unit", choices=("word", "byte"), default="word", help="as train_gpt --mask-unit")
    ap.add_argument("--seed", type=int, default=1337, help="the masking seed (train_gpt --seed)")
    ap.add_argument("--init-seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "kjv.txt"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.init_seed)
    p = dict(PRESETS[a.model])
    if a.lr is not None:
        p["lr"] = a.lr
    # the rate as train_gpt holds it (float32), widened as mlm.hpp widens it
    rate = float(torch.tensor(0.15, dtype=torch.float32).item())
    cfg = dict(V=VOCAB, post_ln=not a.pre_ln, rate=rate, mask_seed=a.seed, steps=a.steps, warmup=a.warmup,
               min_lr_frac=0.1, wd=0.1, beta1=0.9, beta2=0.95, eps=1e-8, clip=1.0, **p)
    corpus = Corpus(a.data, p["T"], a.mask_unit == "word")
    model = Bert(cfg)
    init_as_train_gpt(model)
    opt = make_optimizer(model, cfg)
    t0 = time.perf_counter()
    for step in range(a.steps):
        x, y = corpus.train_batch(step, p["B"], rate, a.seed)
        loss = train_step(model, opt, cfg, step, x, y)
        done = step + 1
        if (a.eval_every and done % a.eval_every == 0) or done == a.steps:
            vl, acc, acc_m, acc_o = evaluate(model, corpus, cfg, a.eval_batches)
            print(f"step {done:4d}/{a.steps}   train {loss:.6f}   val {vl:.6f} acc {acc:.4f} "
                  f"(at [MASK] {acc_m:.4f}, elsewhere {acc_o:.4f})   "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    if not math.isfinite(loss):
        sys.exit("training diverged")


if __name__ == "__main__":
    main()
