"""Forward and training speed of TinyTransformer vs a plain reference transformer of the same size.

Prints one table measured in one run (side by side, interleaved repeats, median of several):
  untraced forward, traced forward, reference (nanoGPT-style, SDPA) forward, for T in {16, 64, 256};
  training steps/s, ours vs the reference, same batch and optimizer.
Run: .venv/bin/python bench/bench_model.py [--device auto] [--batch 8]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from viz_model import ModelConfig, TinyTransformer
from viz_model.device import resolve_device


class RefBlock(nn.Module):
    """The textbook pre-norm block, nothing traced, no options."""

    def __init__(self, d, h, ff):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class RefModel(nn.Module):
    """Same size as TinyTransformer with learned positions (the cheapest encoding for both)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(RefBlock(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.tok.weight
        self.scale = math.sqrt(cfg.d_model)

    def forward(self, ids, targets=None):
        x = self.tok(ids) * self.scale + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timeit(fn, device, repeats: int, inner: int) -> float:
    """Median milliseconds per call."""
    fn()
    sync(device)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync(device)
        samples.append((time.perf_counter() - t0) * 1000 / inner)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--train-steps", type=int, default=30)
    args = ap.parse_args()
    device = resolve_device(args.device)
    torch.manual_seed(0)
    cfg = ModelConfig.preset("classroom", vocab_size=1000, max_len=256, pos_encoding="learned")
    ours = TinyTransformer(cfg).to(device).eval()
    ref = RefModel(cfg).to(device).eval()
    print(f"device={device}  threads={torch.get_num_threads()}  model: {cfg.n_layers} layers, d_model={cfg.d_model}, "
          f"{cfg.n_heads} heads, {ours.num_params():,} params (ref {sum(p.numel() for p in ref.parameters()):,})")
    print()
    print(f"{'T':>5} {'ours untraced ms':>17} {'ours traced ms':>15} {'reference ms':>13} "
          f"{'untraced/ref':>13} {'traced/untraced':>16}")
    with torch.inference_mode():
        for T in (16, 64, 256):
            x = torch.randint(5, cfg.vocab_size, (args.batch, T), device=device)
            inner = max(1, 256 // T)
            res = {"u": [], "t": [], "r": []}
            runs = {"u": lambda x=x: ours(x), "t": lambda x=x: ours(x, trace=True), "r": lambda x=x: ref(x)}
            for i in range(4):  # interleave, rotating the order, so drift and warm caches hit all three alike
                for name in list(runs)[i % 3:] + list(runs)[: i % 3]:
                    res[name].append(timeit(runs[name], device, args.repeats, inner))
            u, t, r = (statistics.median(v) for v in res.values())
            print(f"{T:>5} {u:>17.2f} {t:>15.2f} {r:>13.2f} {u / r:>12.2f}x {t / u:>15.2f}x")

    print()
    T = 64
    x = torch.randint(5, cfg.vocab_size, (32, T + 1), device=device)
    rates = {"ours": [], "reference": []}

    def train_rate(model, fwd) -> float:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step():
            loss = fwd(x[:, :-1], x[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        ms = timeit(step, device, 3, max(1, args.train_steps // 3))
        return 1000 / ms

    for _ in range(2):
        rates["ours"].append(train_rate(ours, lambda a, b: ours(a, targets=b).loss))
        rates["reference"].append(train_rate(ref, lambda a, b: ref(a, b)[1]))
    o, r = statistics.median(rates["ours"]), statistics.median(rates["reference"])
    print(f"training (batch 32, T={T}, AdamW): ours {o:.1f} steps/s, reference {r:.1f} steps/s, ratio {o / r:.2f}x")


if __name__ == "__main__":
    main()
