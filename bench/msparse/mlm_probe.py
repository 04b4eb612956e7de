#!/usr/bin/env python3
"""Independent minimal byte-level BERT MLM trainer (probe of the 'unigram plateau'): its own
PyTorch model and data path, sharing no code with train_gpt or scripts/reference_bert.py, to
tell a property of the task from a bug of ours (bench/msparse/RESULTS.md). One thread.

    /usr/bin/python3 bench/msparse/mlm_probe.py --name t32 --L 2 --C 128 --NH 4 --B 16 \
        --T 32 --byte-mask --lr 1e-3 --sched const --warmup 100 --steps 3000 --eval-every 100

Model: learned token + position embeddings, nn.TransformerEncoderLayer (gelu, batch_first,
dropout 0, norm_first per --pre-ln), post-LN adds an embedding LayerNorm, pre-LN adds a
final LayerNorm; MLM head dense+GELU+LayerNorm, decoder tied to token embedding + bias.
Data: kjv.txt, first 90% bytes train, last 10% validation, random windows of T-2 bytes,
sequence [CLS] bytes [SEP]; whole-word (runs of word bytes) or single-byte masking of 15%,
80/10/10. Loss on masked positions only.
"""
import argparse, math, os, random, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
CLS, SEP, MASK, PAD = 256, 257, 258, 259
V = 264


def word_byte(b):
    return 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b >= 0x80


def space_byte(b):
    return b == 32 or 9 <= b <= 13


def mask_seq(seq, rng, whole, rate=0.15):
    """seq: list of ints ([CLS] .. [SEP]); returns (inputs, targets with -100 = no loss)."""
    T = len(seq)
    units, i = [], 1
    while i < T - 1:
        b = seq[i]
        if space_byte(b):
            i += 1
            continue
        j = i + 1
        if whole and word_byte(b):
            while j < T - 1 and word_byte(seq[j]):
                j += 1
        units.append((i, j))
        i = j
    rng.shuffle(units)
    want = max(1, round(rate * (T - 2)))
    inp, tgt, got = list(seq), [-100] * T, 0
    for b, e in units:
        if got >= want:
            break
        if got + (e - b) > want:
            continue
        for k in range(b, e):
            tgt[k] = seq[k]
            u = rng.random()
            if u < 0.8:
                inp[k] = MASK
            elif u < 0.9:
                inp[k] = rng.randrange(256)
        got += e - b
    return inp, tgt


class Data:
    def __init__(self, path, T):
        raw = open(path, "rb").read()
        n = len(raw)
        cut = int(n * 0.9)
        self.train, self.val, self.T = raw[:cut], raw[cut:], T

    def batch(self, src, B, rng, whole, T=None):
        xs, ys = [], []
        L = (T or self.T) - 2
        for _ in range(B):
            s = rng.randrange(len(src) - L)
            x, y = mask_seq([CLS] + list(src[s:s + L]) + [SEP], rng, whole)
            xs.append(x)
            ys.append(y)
        return torch.tensor(xs), torch.tensor(ys)


class MLM(nn.Module):
    def __init__(self, L, C, NH, T, pre_ln, init, pos="learned"):
        super().__init__()
        self.pre_ln = pre_ln
        self.tok = nn.Embedding(V, C)
        self.pos = nn.Embedding(T, C)
        self.emb_ln = nn.LayerNorm(C) if not pre_ln else nn.Identity()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(C, NH, 4 * C, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=pre_ln) for _ in range(L)])
        self.final_ln = nn.LayerNorm(C) if pre_ln else nn.Identity()
        self.head = nn.Linear(C, C)
        self.head_ln = nn.LayerNorm(C)
        self.bias = nn.Parameter(torch.zeros(V))
        if init == "bert":  # N(0, 0.02) for every matrix incl. embeddings, zero biases
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    nn.init.normal_(p, 0.0, 0.02)
                elif "norm" in name or "ln" in name:
                    pass  # LayerNorm weight 1 / bias 0 already
                else:
                    nn.init.zeros_(p)
        elif init == "emb02":  # PyTorch default everywhere except embeddings N(0,0.02)
            nn.init.normal_(self.tok.weight, 0.0, 0.02)
            nn.init.normal_(self.pos.weight, 0.0, 0.02)
        # init == "default": PyTorch defaults (Embedding N(0,1), Linear kaiming-uniform, MHA xavier)
        if pos == "sin":  # learnable, but initialised with sinusoids at the RMS of N(0, 0.02)
            t = torch.arange(T).float()[:, None]
            f = torch.exp(-math.log(10000.0) * torch.arange(0, C, 2).float() / C)[None, :]
            pe = torch.zeros(T, C)
            pe[:, 0::2] = torch.sin(t * f)
            pe[:, 1::2] = torch.cos(t * f)
            with torch.no_grad():
                self.pos.weight.copy_(pe * (0.02 / math.sqrt(0.5)))

    def forward(self, x):
        T = x.shape[1]
        h = self.emb_ln(self.tok(x) + self.pos(torch.arange(T)))
        for l in self.layers:
            h = l(h)
        h = self.final_ln(h)
        h = self.head_ln(F.gelu(self.head(h)))
        return h @ self.tok.weight.t() + self.bias


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--C", type=int, default=256)
    ap.add_argument("--NH", type=int, default=4)
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--sched-steps", type=int, default=3000)
    ap.add_argument("--sched", default="cosine", choices=["cosine", "const"],
                    help="after warm-up: cosine to 10%% over sched-steps, or constant lr")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--pre-ln", action="store_true")
    ap.add_argument("--byte-mask", action="store_true")
    ap.add_argument("--init", default="bert", choices=["bert", "default", "emb02"])
    ap.add_argument("--pos", default="learned", choices=["learned", "sin"])
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--stop-after-leave", type=int, default=150,
                    help="stop this many steps after the plateau is left")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--short-T", type=int, default=0,
                    help="curriculum: train on windows of this length for the first --short-steps")
    ap.add_argument("--short-steps", type=int, default=0)
    ap.add_argument("--val-n", type=int, default=32, help="sequences in the fixed validation set")
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    data = Data(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "kjv.txt"), a.T)
    whole = not a.byte_mask
    vx, vy = data.batch(data.val, a.val_n, random.Random(12345), whole)  # fixed validation set
    rng = random.Random(a.seed)
    model = MLM(a.L, a.C, a.NH, a.T, a.pre_ln, a.init, a.pos)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)

    def lr_at(s):  # linear warm-up, cosine to 10% over sched-steps
        if s < a.warmup:
            return a.lr * (s + 1) / a.warmup
        if a.sched == "const":
            return a.lr
        p = min(1.0, (s - a.warmup) / max(1, a.sched_steps - a.warmup))
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    def evaluate():
        model.eval()
        with torch.no_grad():
            lg = model(vx)
            m = vy >= 0
            loss = F.cross_entropy(lg[m], vy[m]).item()
            acc = (lg[m].argmax(-1) == vy[m]).float().mean().item()
        model.train()
        return loss, acc

    print(f"# {a.name}: {vars(a)} params={sum(p.numel() for p in model.parameters())}", flush=True)
    t0 = time.time()
    left = None
    below27 = None
    tr_loss = float("nan")
    for step in range(a.steps + 1):
        if step % a.eval_every == 0 or step == a.steps:
            vl, va = evaluate()
            el = time.time() - t0
            print(f"{a.name} step {step:5d} train {tr_loss:.3f} val {vl:.3f} acc {va:.3f} "
                  f"lr {lr_at(step):.2e} t {el:.0f}s s/step {el / max(step, 1):.3f}", flush=True)
            if below27 is None and vl < 2.7:
                below27 = step
                print(f"{a.name} VAL_BELOW_2.7 at step {step}", flush=True)
            if left is None and (vl < 2.6 or va > 0.30):
                left = step
                print(f"{a.name} LEFT_PLATEAU at step {step}", flush=True)
            if left is not None and step >= left + a.stop_after_leave:
                break
            if el > a.minutes * 60:
                print(f"{a.name} time cap reached", flush=True)
                break
        if step == a.steps:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        T_now = a.short_T if step < a.short_steps and a.short_T else a.T
        x, y = data.batch(data.train, a.B, rng, whole, T_now)
        lg = model(x)
        loss = F.cross_entropy(lg.view(-1, V), y.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tr_loss = loss.item()
    print(f"{a.name} DONE left={left} below2.7={below27} steps={step} s/step={(time.time() - t0) / max(step, 1):.3f}", flush=True)


if __name__ == "__main__":
    main()
