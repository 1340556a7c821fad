"""The English model beside the classroom model: parameters and one forward pass at T = 32 on one CPU thread (the
app's setting), untraced and traced, measured side by side in one run (median of repeated passes, ratios).

Run: .venv/bin/python bench/bench_english.py [--T 32] [--reps 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from viz_model import ASSETS_DIR
from viz_model.checkpoint import load_checkpoint


def ms_per_pass(model, ids: torch.Tensor, trace: bool, reps: int) -> float:
    with torch.no_grad():
        for _ in range(3):
            model(ids, trace=trace)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model(ids, trace=trace)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--T", type=int, default=32)
    p.add_argument("--reps", type=int, default=50)
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in ("classroom", "english"):
        ckpt = load_checkpoint(ASSETS_DIR / "models" / f"{name}.safetensors")
        model = ckpt.model.eval()
        ids = torch.randint(5, model.config.vocab_size, (1, min(args.T, model.config.max_len)))
        rows.append((name, model.num_params(), ms_per_pass(model, ids, False, args.reps),
                     ms_per_pass(model, ids, True, args.reps), ckpt.metadata))
    base = rows[0]
    print(f"one forward pass at T = {args.T}, 1 CPU thread, median of {args.reps}")
    print(f"{'model':<10} {'params':>10} {'fast ms':>8} {'traced ms':>10} {'traced/fast':>12} "
          f"{'traced vs classroom':>20}")
    for name, n, fast, traced, _ in rows:
        print(f"{name:<10} {n:>10,} {fast:>8.2f} {traced:>10.2f} {traced / fast:>12.2f} {traced / base[3]:>19.2f}x")
    meta = rows[1][4]
    print(f"English build: {meta.get('build_seconds')} s on {meta.get('device')} "
          f"({meta.get('train_seconds')} s training, {meta.get('steps')} steps)")


if __name__ == "__main__":
    main()
