"""ALiBi's headline claim (Press et al., 2022), measured on our task: train at one length, evaluate at 1x, 2x, 4x.

Trains the five "enc-*" recipes (none / sinusoidal / learned / rope / alibi: the same data, seed, steps and size, only
the position method differs; max_len 64) into a temporary folder, then scores the same held-out tokens cut into
windows of 64, 128 and 256 (lessons.rope.length_losses; RoPE also under its scalings). Prints one table.

Those recipes train on one sentence per sequence (at most ~17 tokens), so every window there is already past the
positions any model trained on. --packed is the paper's setup in miniature: the same five models (the enc-* size)
trained on the corpus packed end to end (<bos> s <eos> <bos> s ...) in windows of L = 32, then scored at 1x, 2x, 4x L.

    nice -n 10 .venv/bin/python bench/bench_alibi_length.py [--budget 4096] [--out DIR] [--packed [--steps 600]]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from viz_model import checkpoint, rope
from viz_model.config import POS_ENCODINGS, ModelConfig
from viz_model.data import corpus_split
from viz_model.lessons import rope as rope_lesson
from viz_model.model import TinyTransformer
from viz_model.tokenizer import load_tokenizer, special_ids
from viz_model.train import SMALL
from viz_model.train import main as train_main

MULTIPLES = (1, 2, 4)


def packed(steps: int, budget: int, L: int = 32, batch: int = 32, seed: int = 0) -> None:
    """Train each method on packed text at length L (same data order, seed, steps), score held-out packed windows."""
    tok = load_tokenizer("word")
    sp = special_ids(tok)
    flat = [t for e in tok.encode_batch(corpus_split().train) for t in (sp["<bos>"], *e.ids, sp["<eos>"])]
    data = torch.tensor(flat)
    heldout = rope_lesson.heldout_ids(tok)
    total = rope_lesson.experiment_tokens(L, MULTIPLES, min(budget, sum(map(len, heldout)) - 1))
    print(f"packed: {len(flat):,} training tokens, windows of {L}, {steps} steps x {batch}; {total} held-out tokens "
          "per cell", flush=True)
    rows = []
    for method in POS_ENCODINGS:
        torch.manual_seed(seed)
        cfg = ModelConfig(**{**SMALL, "max_len": L}, vocab_size=tok.get_vocab_size(), pos_encoding=method)
        model = TinyTransformer(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        gen = torch.Generator().manual_seed(seed)
        t0 = time.perf_counter()
        for step in range(steps):
            starts = torch.randint(0, len(flat) - L - 1, (batch,), generator=gen)
            x = torch.stack([data[s:s + L] for s in starts])
            y = torch.stack([data[s + 1:s + L + 1] for s in starts])
            loss = model(x, targets=y).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for g in opt.param_groups:  # linear warm-up over 50 steps, then cosine to a tenth
                g["lr"] = 3e-3 * min(1.0, (step + 1) / 50) * (0.55 + 0.45 * torch.cos(torch.tensor(
                    3.14159 * step / steps)).item())
            opt.step()
        model.eval()
        table = rope_lesson.length_losses(model, heldout, MULTIPLES, total=total)
        print(f"trained {method} in {time.perf_counter() - t0:.0f} s (last batch loss {loss.item():.3f})", flush=True)
        for r in table.itertuples():
            label = method if method != "rope" or r.method == "none" else f"rope + {rope.ROPE_SCALING_LABELS[r.method]}"
            rows.append((label, r.multiple, r.loss, r.note))
    _print(rows, L, total)


def _print(rows: list, L: int, total: int) -> None:
    labels = list(dict.fromkeys(r[0] for r in rows))
    print(f"\nheld-out next-token loss (nats), training length {L}, {total} tokens per cell; lower is better")
    print(f"{'method':<34}" + "".join(f"{f'{m}x = {m * L}':>14}" for m in MULTIPLES))
    for label in labels:
        cells = {m: (loss, note) for lab, m, loss, note in rows if lab == label}
        print(f"{label:<34}" + "".join(f"{'—' if cells[m][0] != cells[m][0] else f'{cells[m][0]:.3f}':>14}"
                                       for m in MULTIPLES))


def run(out: Path, budget: int) -> None:
    rows = []
    for method in POS_ENCODINGS:
        path = out / f"enc-{method}.safetensors"
        if not path.exists():
            t0 = time.perf_counter()
            train_main(["--recipe", f"enc-{method}", "--out", str(path)])
            print(f"trained enc-{method} in {time.perf_counter() - t0:.0f} s", flush=True)
        model, tok = checkpoint.load(path)
        model.eval()
        L = model.config.max_len
        heldout = rope_lesson.heldout_ids(tok)
        have = sum(map(len, heldout)) - 1  # every cell scores the same tokens: at most what the held-out text has
        total = rope_lesson.experiment_tokens(L, MULTIPLES, min(budget, have))
        table = rope_lesson.length_losses(model, heldout, MULTIPLES, total=total)
        for r in table.itertuples():
            label = method if method != "rope" or r.method == "none" else f"rope + {rope.ROPE_SCALING_LABELS[r.method]}"
            rows.append((label, r.multiple, r.loss, r.note))
    _print(rows, L, total)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=4096, help="held-out tokens scored per cell (at most all of them)")
    p.add_argument("--out", default=None, help="keep the trained models here (default: a temporary folder)")
    p.add_argument("--packed", action="store_true", help="train on packed text at L = 32 (the paper's setup)")
    p.add_argument("--steps", type=int, default=600, help="--packed: training steps per method")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.packed:
        packed(args.steps, args.budget)
    elif args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        run(Path(args.out), args.budget)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(Path(tmp), args.budget)
