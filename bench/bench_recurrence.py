"""RNN vs LSTM vs transformer, measured in one run: forward+backward time against T, and the recall task.

Prints three tables:
  1. forward+backward ms of one batch for T in 16..1024 (parameter-matched models, taking turns at each T),
     with each model's ratio to its own T=16 time and the graph depth (sequential steps);
  2. accuracy against distance of the shipped recall models (assets/models/recurrence/), evaluated fresh;
  3. their gradient by distance: the fitted factor per step of ‖∂ℓ/∂x_t‖.
Run: nice -n 5 .venv/bin/python bench/bench_recurrence.py [--device auto] [--batch 8] [--repeats 3]
"""

from __future__ import annotations

import argparse

import torch

from viz_model.lessons import recurrence as R
from viz_model.train import RECALL_DISTANCES


def timing_table(rows: list[R.TimingRow], lengths: list[int]) -> str:
    by = {(r.kind, r.T): r for r in rows}
    kinds = list(dict.fromkeys(r.kind for r in rows))
    head = "| T | " + " | ".join(f"{k} ms | {k} ×T={lengths[0]} | depth" for k in kinds) + " |"
    lines = [head, "|" + "---|" * (1 + 3 * len(kinds))]
    for T in lengths:
        cells = []
        for k in kinds:
            r = by[k, T]
            layers = 2 if k == "transformer" else 1
            cells += [f"{r.ms:.1f}", f"{r.ratio:.2f}", str(R.graph_depth(k, T, layers).depth)]
        lines.append(f"| {T} | " + " | ".join(cells) + " |")
    params = ", ".join(f"{k} {by[k, lengths[0]].params:,}" for k in kinds)
    return "\n".join(lines) + f"\n\nparameters: {params}; device {rows[0].device}"


def accuracy_table(rows: list[R.AccuracyRow]) -> str:
    distances = list(rows[0].accuracy)
    lines = ["| model | params | " + " | ".join(f"d={d}" for d in distances) + " |",
             "|" + "---|" * (2 + len(distances))]
    for r in rows:
        lines.append(f"| {r.kind} | {r.params:,} | " + " | ".join(f"{r.accuracy[d]:.2f}" for d in distances) + " |")
    return "\n".join(lines) + "\n\nchance = 1/16 = 0.06; 128 held-out inputs per distance"


def gradient_table(shipped, distance: int = 40) -> str:
    ids = R.recall_inputs(shipped["rnn"].tokenizer, distance, n=16)
    lines = ["| model | factor per step | ‖∂ℓ/∂x‖ at d=1 | at d=10 | at d=" + str(distance) + " (the key) |",
             "|---|---|---|---|---|"]
    for kind, ck in shipped.items():
        c = R.gradient_curve(ck.model, ids)
        lines.append(f"| {kind} | {c.factor_per_step:.3f} | {c.norms[1]:.2e} | {c.norms[10]:.2e} | "
                     f"{c.norms[distance]:.2e} |")
    return "\n".join(lines) + f"\n\ngeometric mean over 16 recall inputs at distance {distance}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    lengths = list(R.LENGTHS)
    models = R.comparable_models(vocab_size=256, d_model=64, n_layers=2, max_len=max(lengths))
    rows = R.time_forward_backward(models, lengths, args.batch, args.device, args.repeats)
    print(f"## Forward + backward, batch {args.batch}, median of {args.repeats}, {args.threads} thread(s)\n")
    print(timing_table(rows, lengths))
    shipped = R.load_shipped()
    print("\n## Recall accuracy against distance (shipped models, 2000 steps each)\n")
    print(accuracy_table(R.accuracy_table({k: c.model for k, c in shipped.items()}, shipped["rnn"].tokenizer,
                                          RECALL_DISTANCES)))
    print("\n## Gradient by distance (shipped models)\n")
    print(gradient_table(shipped))


if __name__ == "__main__":
    main()
