"""ALiBi's headline claim (Press et al., 2022), measured on our task: train at one length, evaluate at 1x, 2x, 4x.

Trains the five "enc-*" recipes (none / sinusoidal / learned / rope / alibi: the same data, seed, steps and size, only
the position method differs; max_len 64) into a temporary folder, then scores the same held-out tokens cut into
windows of 64, 128 and 256 (lessons.rope.length_losses; RoPE also under its scalings). Prints one table.

    nice -n 10 .venv/bin/python bench/bench_alibi_length.py [--budget 4096] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from viz_model import checkpoint, rope
from viz_model.config import POS_ENCODINGS
from viz_model.lessons import rope as rope_lesson
from viz_model.train import main as train_main

MULTIPLES = (1, 2, 4)


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
        total = rope_lesson.experiment_tokens(L, MULTIPLES, budget)
        table = rope_lesson.length_losses(model, rope_lesson.heldout_ids(tok), MULTIPLES, total=total)
        for r in table.itertuples():
            label = method if method != "rope" or r.method == "none" else f"rope + {rope.ROPE_SCALING_LABELS[r.method]}"
            rows.append((label, r.multiple, r.loss, r.note))
    labels = list(dict.fromkeys(r[0] for r in rows))
    print(f"\nheld-out next-token loss (nats), training length {L}, {total} tokens per cell; lower is better")
    print(f"{'method':<34}" + "".join(f"{f'{m}x = {m * L}':>14}" for m in MULTIPLES))
    for label in labels:
        cells = {m: (loss, note) for lab, m, loss, note in rows if lab == label}
        print(f"{label:<34}" + "".join(f"{'—' if cells[m][0] != cells[m][0] else f'{cells[m][0]:.3f}':>14}"
                                       for m in MULTIPLES))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=4096, help="held-out tokens scored per cell (about)")
    p.add_argument("--out", default=None, help="keep the trained models here (default: a temporary folder)")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        run(Path(args.out), args.budget)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(Path(tmp), args.budget)
