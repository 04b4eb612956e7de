#!/usr/bin/python3
"""PyTorch reference for train_gpt --arch bert (examples/gpt): builds the same BERT encoder with
its MLM head and writes debug states that tests/model/test_bert_reference.cpp checks tensor by
tensor (so CI needs no PyTorch):

    /usr/bin/python3 scripts/reference_bert.py --out tests/model/data

writes debug_bert.bin (post-LN, as the original BERT) and debug_bert_preln.bin (--pre-ln).
The layout is reference_gpt.py's (b"GPTDBG01") with arch = 2:
    int32[16]  1, 2, V, T, L, C, NH, 0, B, steps, warmup, post_ln, mask_seed, 0...
    float32[8] lr, min_lr_frac, weight_decay, beta1, beta2, eps, grad_clip, mask_rate
    int32[B*T] inputs (masked), int32[B*T] targets (the original token at predicted
    positions, -1 elsewhere), then parameters, logits, loss, gradients, losses as for GPT.
Canonical order (examples/gpt/params.hpp): wte wpe emb_ln_w emb_ln_b (post-LN) {ln1_w ln1_b
qkv_w qkv_b proj_w proj_b ln2_w ln2_b fc_w fc_b fcp_w fcp_b} x L lnf_w lnf_b (pre-LN) mlm_w
mlm_b mlm_ln_w mlm_ln_b mlm_bias.

mlm_mask() is examples/gpt/mlm.hpp's whole-word masking, draw for draw, so the C++ test can
also check that train_gpt masks these sequences the same way.
"""
import argparse
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

from reference_gpt import TEXT, lr_at, make_optimizer

CLS, SEP, MASK, PAD = 256, 257, 258, 259
VOCAB = 264
M64 = (1 << 64) - 1


class SplitMix:
    """examples/gpt/params.hpp's rng: splitmix64, uniform() in [0, 1) from the top 53 bits."""

    def __init__(self, state):
        self.state = state & M64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)


def word_byte(b):
    return 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b >= 0x80


def space_byte(b):
    return b == 32 or 9 <= b <= 13


def mlm_mask(tokens, rate, seed, index, whole_words=True):
    """Masking of [CLS] bytes [SEP] (in place) by whole words, or by single bytes with
    whole_words=False (train_gpt --mask-unit byte); returns the targets (-1: no loss)."""
    T = len(tokens)
    units, i = [], 1
    while i < T - 1:
        b = tokens[i]
        if space_byte(b):
            i += 1
            continue
        j = i + 1
        if whole_words and word_byte(b):
            while j < T - 1 and word_byte(tokens[j]):
                j += 1
        units.append((i, j))
        i = j
    r = SplitMix(seed * 0x9E3779B97F4A7C15 + index * 0xD1B54A32D192ED03 + 0x6D6C6D)
    for n in range(len(units), 1, -1):  # Fisher-Yates
        j = r.next_u64() % n
        units[n - 1], units[j] = units[j], units[n - 1]
    want = max(1, int(rate * (T - 2) + 0.5))
    chosen, got = [False] * T, 0
    for b, e in units:
        if got >= want:
            break
        if got + (e - b) > want:
            continue
        for i in range(b, e):
            chosen[i] = True
        got += e - b
    targets = [-1] * T
    for i in range(T):
        if not chosen[i]:
            continue
        targets[i] = tokens[i]
        u = r.uniform()
        if u < 0.8:
            tokens[i] = MASK
        elif u < 0.9:
            tokens[i] = r.next_u64() % 256
    return targets


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["C"]
        self.cfg = cfg
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.fcp = nn.Linear(4 * C, C)

    def attn(self, x):  # bidirectional: every query sees every key
        B, T, C = x.shape
        NH = self.cfg["NH"]
        hd = C // NH
        q, k, v = (t.view(B, T, NH, hd).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        att = ((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def mlp(self, x):
        return self.fcp(F.gelu(self.fc(x), approximate="tanh"))

    def forward(self, x):
        if self.cfg["post_ln"]:
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Bert(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        V, T, C = cfg["V"], cfg["T"], cfg["C"]
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.emb_ln = nn.LayerNorm(C, eps=1e-5)
        self.blocks = nn.ModuleList([Layer(cfg) for _ in range(cfg["L"])])
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self.mlm = nn.Linear(C, C)
        self.mlm_ln = nn.LayerNorm(C, eps=1e-5)
        self.mlm_bias = nn.Parameter(torch.zeros(V))

    def canonical(self):
        ps = [self.wte.weight, self.wpe.weight]
        if self.cfg["post_ln"]:
            ps += [self.emb_ln.weight, self.emb_ln.bias]
        for b in self.blocks:
            ps += [b.ln1.weight, b.ln1.bias, b.qkv.weight, b.qkv.bias, b.proj.weight, b.proj.bias,
                   b.ln2.weight, b.ln2.bias, b.fc.weight, b.fc.bias, b.fcp.weight, b.fcp.bias]
        if not self.cfg["post_ln"]:
            ps += [self.lnf.weight, self.lnf.bias]
        ps += [self.mlm.weight, self.mlm.bias, self.mlm_ln.weight, self.mlm_ln.bias, self.mlm_bias]
        return ps

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))[None]
        if self.cfg["post_ln"]:
            x = self.emb_ln(x)
        for b in self.blocks:
            x = b(x)
        if not self.cfg["post_ln"]:
            x = self.lnf(x)
        h = self.mlm_ln(F.gelu(self.mlm(x), approximate="tanh"))
        logits = h @ self.wte.weight.t() + self.mlm_bias
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def train_step(model, opt, cfg, step, x, y):
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=False)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.canonical(), cfg["clip"])
    for g in opt.param_groups:
        g["lr"] = lr_at(cfg, step)
    opt.step()
    return loss.item()


def write_debug_state(post_ln, out_dir):
    torch.manual_seed(44 if post_ln else 45)
    cfg = dict(V=VOCAB, T=32, L=2, C=32, NH=4, B=4, steps=10, warmup=2, lr=1e-3, min_lr_frac=0.1, wd=0.1,
               beta1=0.9, beta2=0.95, eps=1e-8, clip=1.0, post_ln=post_ln, mask_rate=0.15, mask_seed=1234)
    # the rate as train_gpt holds it (float32), widened as mlm.hpp widens it
    rate = struct.unpack("<f", struct.pack("<f", cfg["mask_rate"]))[0]
    model = Bert(cfg)
    with torch.no_grad():  # every tensor random (LayerNorms and biases too): every gradient path is used
        for p in model.canonical():
            p.normal_(0.0, 0.02 if p.dim() >= 2 else 0.05)
        for ln in [model.emb_ln, model.lnf, model.mlm_ln] + [m for b in model.blocks for m in (b.ln1, b.ln2)]:
            ln.weight.add_(1.0)
    B, T = cfg["B"], cfg["T"]
    # sequence i: [CLS] + T-2 bytes of TEXT at 37 i + [SEP], masked as global sample i
    xs, ys = [], []
    for i in range(B):
        seq = [CLS] + list(TEXT[i * 37: i * 37 + T - 2]) + [SEP]
        ys.append(mlm_mask(seq, rate, cfg["mask_seed"], i))
        xs.append(seq)
    x, y = torch.tensor(xs, dtype=torch.long), torch.tensor(ys, dtype=torch.long)

    params0 = [p.detach().clone() for p in model.canonical()]
    logits, loss = model(x, y)
    loss.backward()
    grads = [p.grad.detach().clone() for p in model.canonical()]
    model.zero_grad()
    opt = make_optimizer(model, cfg)
    losses = [train_step(model, opt, cfg, s, x, y) for s in range(cfg["steps"])]

    name = "debug_bert.bin" if post_ln else "debug_bert_preln.bin"
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "wb") as f:
        f.write(b"GPTDBG01")
        hdr = [1, 2, cfg["V"], T, cfg["L"], cfg["C"], cfg["NH"], 0, B, cfg["steps"], cfg["warmup"], int(post_ln),
               cfg["mask_seed"]]
        f.write(struct.pack("<16i", *(hdr + [0] * (16 - len(hdr)))))
        f.write(struct.pack("<8f", cfg["lr"], cfg["min_lr_frac"], cfg["wd"], cfg["beta1"], cfg["beta2"],
                            cfg["eps"], cfg["clip"], cfg["mask_rate"]))
        f.write(x.to(torch.int32).numpy().tobytes())
        f.write(y.to(torch.int32).numpy().tobytes())
        f.write(struct.pack("<i", len(params0)))
        for p in params0:
            f.write(p.contiguous().numpy().astype("<f4").tobytes())
        f.write(logits.detach().contiguous().numpy().astype("<f4").tobytes())
        f.write(struct.pack("<f", loss.item()))
        for g in grads:
            f.write(g.contiguous().numpy().astype("<f4").tobytes())
        f.write(struct.pack(f"<{len(losses)}f", *losses))
    os.replace(path + ".tmp", path)
    print(f"{path}: {os.path.getsize(path)} bytes, {int((y >= 0).sum())} predicted positions, "
          f"loss {loss.item():.6f}, losses {losses[0]:.4f} -> {losses[-1]:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "model", "data"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for post_ln in (True, False):
        write_debug_state(post_ln, args.out)


if __name__ == "__main__":
    main()
