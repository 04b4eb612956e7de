#!/usr/bin/python3
"""PyTorch reference for examples/gpt: builds the same GPT-2 / GPT-NeoX model and writes a
small binary debug state per architecture that tests/model/test_gpt_reference.cpp checks
tensor by tensor (so CI needs no PyTorch).

    /usr/bin/python3 scripts/reference_gpt.py --out tests/model/data
    python3 scripts/reference_gpt.py --device cuda --out DIR   # the same states computed on a GPU
    /usr/bin/python3 scripts/reference_gpt.py --bench --model small --threads 1   # ms/step
    python3 scripts/reference_gpt.py --bench --model gpt2-124m --device cuda --precision bf16 --sdpa
    python3 scripts/reference_gpt.py --bench --model tiny --steps 4 --profile 2   # + kernel times
        # the GPU anchor of scripts/gpu-check.sh: bf16 autocast, PyTorch's fused attention

Debug state layout (little endian):
    b"GPTDBG01"
    int32[16]  version=1, arch(0 gpt2, 1 neox), V, T, L, C, NH, rot_dim, B, steps, warmup, 0...
    float32[8] lr, min_lr_frac, weight_decay, beta1, beta2, eps, grad_clip, rotary_pct
    int32[B*T] inputs, int32[B*T] targets
    int32      number of parameter tensors P, then P x float32[numel] (canonical order)
    float32[B*T*V] logits, float32 loss
    P x float32[numel] gradients
    float32[steps] losses of `steps` AdamW steps on the same batch (loss before each update)

Canonical order (examples/gpt/model.hpp): wte wpe(gpt2) {ln1_w ln1_b qkv_w qkv_b proj_w
proj_b ln2_w ln2_b fc_w fc_b fcp_w fcp_b} x L lnf_w lnf_b lm_w(neox).
"""
import argparse
import math
import os
import statistics
import struct
import time

import openblas_core

openblas_core.match_cpu()  # OpenBLAS's kernels for this CPU (may restart): before torch loads it
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
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

    def attn(self, x, cos, sin):
        B, T, C = x.shape
        NH = self.cfg["NH"]
        hd = C // NH
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, NH, hd).transpose(1, 2)
        k = k.view(B, T, NH, hd).transpose(1, 2)
        v = v.view(B, T, NH, hd).transpose(1, 2)
        rot = self.cfg["rot"]
        if rot > 0:  # GPT-NeoX rotary (rotate_half) on the first rot dims of each head
            def rope(t):
                tr, tp = t[..., :rot], t[..., rot:]
                x1, x2 = tr[..., : rot // 2], tr[..., rot // 2:]
                rh = torch.cat((-x2, x1), dim=-1)
                return torch.cat((tr * cos + rh * sin, tp), dim=-1)
            q, k = rope(q), rope(k)
        if self.cfg.get("sdpa"):  # --bench --sdpa: PyTorch's fused (flash) attention, as nanoGPT uses
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)

    def mlp(self, x):
        return self.fcp(F.gelu(self.fc(x), approximate="tanh"))

    def forward(self, x, cos, sin):
        if self.cfg["arch"] == "gpt2":
            x = x + self.attn(self.ln1(x), cos, sin)
            return x + self.mlp(self.ln2(x))
        return x + self.attn(self.ln1(x), cos, sin) + self.mlp(self.ln2(x))  # parallel residual


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        V, T, C = cfg["V"], cfg["T"], cfg["C"]
        self.wte = nn.Embedding(V, C)
        if cfg["arch"] == "gpt2":
            self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["L"])])
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        if cfg["arch"] == "neox":
            self.lm = nn.Linear(C, V, bias=False)
        rot = cfg["rot"]
        if rot > 0:
            inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
            freqs = torch.arange(T).float()[:, None] * inv_freq[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)  # buffers: they follow .to(device)
            self.register_buffer("sin", emb.sin(), persistent=False)
        else:
            self.cos = self.sin = None

    def canonical(self):
        """Parameters in the order of examples/gpt/model.hpp global_specs()."""
        ps = [self.wte.weight]
        if self.cfg["arch"] == "gpt2":
            ps.append(self.wpe.weight)
        for b in self.blocks:
            ps += [b.ln1.weight, b.ln1.bias, b.qkv.weight, b.qkv.bias, b.proj.weight, b.proj.bias,
                   b.ln2.weight, b.ln2.bias, b.fc.weight, b.fc.bias, b.fcp.weight, b.fcp.bias]
        ps += [self.lnf.weight, self.lnf.bias]
        if self.cfg["arch"] == "neox":
            ps.append(self.lm.weight)
        return ps

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.wte(idx)
        if self.cfg["arch"] == "gpt2":
            x = x + self.wpe(torch.arange(T, device=idx.device))[None]
        for b in self.blocks:
            x = b(x, self.cos, self.sin)
        x = self.lnf(x)
        logits = x @ self.wte.weight.t() if self.cfg["arch"] == "gpt2" else self.lm(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def lr_at(cfg, step):
    if step < cfg["warmup"]:
        return cfg["lr"] * (step + 1) / cfg["warmup"]
    span = cfg["steps"] - cfg["warmup"]
    r = min(1.0, (step - cfg["warmup"]) / span) if span > 0 else 0.0
    min_lr = cfg["lr"] * cfg["min_lr_frac"]
    return min_lr + 0.5 * (cfg["lr"] - min_lr) * (1.0 + math.cos(math.pi * r))


def make_optimizer(model, cfg, fused=False):
    """AdamW as train_gpt's: one tensor at a time (the debug states), or PyTorch's fused CUDA
    kernel (fused=True: what a PyTorch user trains with on a GPU, for --bench there)."""
    ps = model.canonical()
    decay = [p for p in ps if p.dim() >= 2]
    no_decay = [p for p in ps if p.dim() < 2]
    how = {"fused": True} if fused else {"foreach": False}  # (older PyTorch: no `fused` argument)
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg["wd"]},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], **how)


def train_step(model, opt, cfg, step, x, y, autocast=None):
    if autocast is None:
        logits, loss = model(x, y)
    else:
        with autocast:
            logits, loss = model(x, y)
    opt.zero_grad(set_to_none=False)
    loss.backward()
    if cfg["clip"] > 0:
        torch.nn.utils.clip_grad_norm_(model.canonical(), cfg["clip"])
    lr = lr_at(cfg, step)
    for g in opt.param_groups:
        g["lr"] = lr
    opt.step()
    return loss.item()


TEXT = (b"In the beginning God created the heaven and the earth. And the earth was without form, "
        b"and void; and darkness was upon the face of the deep. And the Spirit of God moved upon "
        b"the face of the waters. And God said, Let there be light: and there was light.")


def write_debug_state(arch, out_dir, dev=torch.device("cpu")):
    torch.manual_seed(42 if arch == "gpt2" else 43)
    cfg = dict(arch=arch, V=256, T=16, L=2, C=32, NH=4, rotary_pct=0.5, B=4, steps=10, warmup=2,
               lr=1e-3, min_lr_frac=0.1, wd=0.1, beta1=0.9, beta2=0.95, eps=1e-8, clip=1.0)
    hd = cfg["C"] // cfg["NH"]
    rot = int(hd * cfg["rotary_pct"]) if arch == "neox" else 0
    cfg["rot"] = rot - rot % 2
    model = GPT(cfg)
    # Every tensor random (LayerNorm and biases too) so that each gradient path is exercised.
    with torch.no_grad():
        for p in model.canonical():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
            else:
                p.normal_(0.0, 0.05)
        for b in model.blocks:
            b.ln1.weight.add_(1.0); b.ln2.weight.add_(1.0)
        model.lnf.weight.add_(1.0)
    B, T = cfg["B"], cfg["T"]
    data = torch.tensor(list(TEXT), dtype=torch.long)
    x = torch.stack([data[i * 37: i * 37 + T] for i in range(B)])
    y = torch.stack([data[i * 37 + 1: i * 37 + T + 1] for i in range(B)])

    params0 = [p.detach().clone() for p in model.canonical()]  # drawn on the CPU whatever the device
    model.to(dev)
    xd, yd = x.to(dev), y.to(dev)
    logits, loss = model(xd, yd)
    loss.backward()
    logits = logits.detach().cpu()
    grads = [p.grad.detach().cpu().clone() for p in model.canonical()]
    model.zero_grad()

    opt = make_optimizer(model, cfg)
    losses = [train_step(model, opt, cfg, s, xd, yd) for s in range(cfg["steps"])]

    path = os.path.join(out_dir, f"debug_{arch}.bin")
    with open(path + ".tmp", "wb") as f:
        f.write(b"GPTDBG01")
        hdr = [1, 0 if arch == "gpt2" else 1, cfg["V"], T, cfg["L"], cfg["C"], cfg["NH"], cfg["rot"], B,
               cfg["steps"], cfg["warmup"]]
        f.write(struct.pack("<16i", *(hdr + [0] * (16 - len(hdr)))))
        f.write(struct.pack("<8f", cfg["lr"], cfg["min_lr_frac"], cfg["wd"], cfg["beta1"], cfg["beta2"],
                            cfg["eps"], cfg["clip"], cfg["rotary_pct"]))
        f.write(x.to(torch.int32).numpy().tobytes())
        f.write(y.to(torch.int32).numpy().tobytes())
        f.write(struct.pack("<i", len(params0)))
        for p in params0:
            f.write(p.contiguous().numpy().astype("<f4").tobytes())
        f.write(logits.contiguous().numpy().astype("<f4").tobytes())
        f.write(struct.pack("<f", loss.item()))
        for g in grads:
            f.write(g.contiguous().numpy().astype("<f4").tobytes())
        f.write(struct.pack(f"<{len(losses)}f", *losses))
    os.replace(path + ".tmp", path)
    print(f"{path}: {os.path.getsize(path)} bytes, loss {loss.item():.6f}, "
          f"losses {losses[0]:.4f} -> {losses[-1]:.4f}")


# train_gpt's GPT presets (examples/gpt/config.hpp, gpt::preset): shape, batch and learning rate.
PRESETS = {
    "tiny": dict(L=2, C=64, NH=4, T=32, B=8, lr=1e-3),
    "small": dict(L=4, C=128, NH=4, T=128, B=8, lr=1e-3),
    "medium": dict(L=8, C=256, NH=8, T=256, B=16, lr=6e-4),
    "gpt2-124m": dict(L=12, C=768, NH=12, T=1024, B=8, lr=6e-4),
}


def bench(args):
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("reference_gpt: --device cuda, but PyTorch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 (train_gpt's sgemm has no TF32)
        torch.backends.cudnn.allow_tf32 = False
    if args.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        raise SystemExit(f"reference_gpt: --sdpa needs PyTorch 2 (this is {torch.__version__})")
    p = PRESETS[args.model]
    if args.batch < 0:
        raise SystemExit(f"reference_gpt: --batch {args.batch}: a count of sequences, or 0 for the preset's")
    cfg = dict(arch=args.arch, V=256, T=p["T"], L=p["L"], C=p["C"], NH=p["NH"], B=args.batch or p["B"], steps=args.steps,
               warmup=2, lr=p["lr"], min_lr_frac=0.1, wd=0.1, beta1=0.9, beta2=0.95, eps=1e-8, clip=1.0,
               sdpa=args.sdpa)
    hd = cfg["C"] // cfg["NH"]
    rot = int(hd * 0.25) if args.arch == "neox" else 0
    cfg["rot"] = rot - rot % 2
    torch.manual_seed(0)
    model = GPT(cfg)
    with torch.no_grad():  # GPT-2 init, as train_gpt (PyTorch defaults diverge with tied N(0,1) embeddings)
        for p in model.canonical():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    model.to(dev)
    opt = make_optimizer(model, cfg, fused=dev.type == "cuda")
    fwd = torch.compile(model) if args.compile else model
    # bf16: autocast (bf16 GEMMs and attention, fp32 master weights and optimizer), as a user
    # of PyTorch trains in bf16
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16) if args.precision == "bf16" else None
    raw = open(args.data, "rb").read(1 << 20)
    data = torch.tensor(list(raw), dtype=torch.long)
    B, T = cfg["B"], cfg["T"]
    if len(data) < B * T + 1:
        raise SystemExit(f"reference_gpt: {args.data} holds {len(data)} bytes, fewer than one batch ({B * T + 1})")
    batches = (len(data) - 1) // (B * T)  # the first MiB, batch after batch, from the start again after it
    times = []
    for s in range(args.steps):
        i = (s % batches) * B * T
        x = torch.stack([data[i + b * T: i + b * T + T] for b in range(B)]).to(dev)
        y = torch.stack([data[i + b * T + 1: i + b * T + T + 1] for b in range(B)]).to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = train_step(fwd, opt, cfg, s, x, y, autocast)  # .item(): the step is done on return
        times.append(time.perf_counter() - t0)
    steady = statistics.median(times[2:]) if len(times) > 3 else times[-1]  # as gpu-check's train_gpt rows
    where = f"threads={args.threads}" if dev.type == "cpu" else f"device={torch.cuda.get_device_name(dev)}"
    if dev.type == "cpu":
        print(f"reference_gpt: {openblas_core.describe()}")
    print(f"pytorch {torch.__version__} arch={args.arch} model={args.model} {where} precision={args.precision} "
          f"attention={'sdpa' if args.sdpa else 'explicit'} compile={'yes' if args.compile else 'no'} "
          f"batch={B} median ms/step {steady * 1e3:.2f} tokens/s {B * T / steady:.0f} final loss {loss:.4f}")
    if args.profile > 0:
        def step_at(s):
            i = (s % batches) * B * T
            x = torch.stack([data[i + b * T: i + b * T + T] for b in range(B)]).to(dev)
            y = torch.stack([data[i + b * T + 1: i + b * T + T + 1] for b in range(B)]).to(dev)
            return train_step(fwd, opt, cfg, s, x, y, autocast)
        profile_steps(args.profile, step_at, args.steps, dev)


def profile_steps(n, step_at, first, dev):
    """Kernel times of n more steps under torch.profiler: per step, largest first (CUDA: each
    kernel's device time; CPU: each operator's own CPU time), then what they leave of the step."""
    from torch.profiler import ProfilerActivity, profile
    cuda = dev.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        t0 = time.perf_counter()
        for s in range(first, first + n):
            step_at(s)  # .item() inside: the step is done on return
        wall_ms = (time.perf_counter() - t0) * 1e3 / n
    rows = []
    for e in prof.key_averages():
        if cuda:
            # the kernels' own rows (an operator's row repeats its kernels' time)
            if not str(getattr(e, "device_type", "")).endswith("CUDA"):
                continue
            us = getattr(e, "self_device_time_total", None)
            if us is None:
                us = getattr(e, "self_cuda_time_total", 0)
        else:
            us = e.self_cpu_time_total
        if us and us > 0:
            rows.append((e.key, e.count / n, us / 1e3 / n))
    rows.sort(key=lambda r: -r[2])
    total = sum(r[2] for r in rows)
    src = "torch.profiler, device time of each kernel" if cuda else "torch.profiler, own CPU time of each operator"
    print(f"pytorch kernel times, per step over {n} step(s) ({src}):")
    print(f"  {'kernel':<60} {'calls':>8} {'ms':>10} {'of step':>8}")
    for name, calls, ms in rows[:20]:
        print(f"  {name[:60]:<60} {calls:8.1f} {ms:10.3f} {100 * ms / wall_ms:7.1f}%")
    if len(rows) > 20:
        rest = sum(r[2] for r in rows[20:])
        print(f"  {'(' + str(len(rows) - 20) + ' more)':<60} {'':>8} {rest:10.3f} {100 * rest / wall_ms:7.1f}%")
    print(f"  {'all kernels':<60} {'':>8} {total:10.3f} {100 * total / wall_ms:7.1f}%")
    print(f"  {'step (wall, profiled)':<60} {'':>8} {wall_ms:10.3f} {100.0:7.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "model", "data"))
    ap.add_argument("--bench", action="store_true", help="time training steps instead of writing debug states")
    ap.add_argument("--model", default="small", choices=sorted(PRESETS), help="train_gpt preset (--bench)")
    ap.add_argument("--arch", default="gpt2", choices=("gpt2", "neox"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=0, help="--bench: sequences per step (0: the preset's)")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "kjv.txt"))
    ap.add_argument("--device", default="cpu", help="cpu or cuda (fp32 there has TF32 off): where --bench "
                    "runs, or where the debug states are computed")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "bf16"), help="--bench: bf16 = autocast to bfloat16")
    ap.add_argument("--sdpa", action="store_true", help="--bench: F.scaled_dot_product_attention (PyTorch 2)")
    ap.add_argument("--compile", action="store_true", help="--bench: torch.compile the model (PyTorch 2)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="--bench: then N more steps under torch.profiler, kernel times per step printed")
    args = ap.parse_args()
    if args.bench:
        bench(args)
        return
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device(args.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("reference_gpt: --device cuda, but PyTorch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as train_gpt's pedantic sgemm
        torch.backends.cudnn.allow_tf32 = False
    for arch in ("gpt2", "neox"):
        write_debug_state(arch, args.out, dev)


if __name__ == "__main__":
    main()
