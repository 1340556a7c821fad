"""The task where that matters: recall a noun across filler letters; the three models' accuracy at each
distance, evaluated here or as saved when they were trained."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from viz_model.checkpoint import Checkpoint
from viz_model.data import RECALL_KEYS
from viz_model.lessons.common import Claim, Fact
from viz_model.lessons.recurrence.models import LSTM, RNN, TRANSFORMER, Progress, name
from viz_model.train import RECALL_DISTANCES, accuracy_by_distance

CHANCE = 1 / len(RECALL_KEYS)


@dataclass
class AccuracyRow:
    kind: str
    params: int
    accuracy: dict[int, float]   # distance -> share of recall inputs answered right (chance 1/16)


def accuracy_table(models: dict[str, nn.Module], tokenizer, distances: Sequence[int] = RECALL_DISTANCES,
                   n: int = 128, progress: Progress = None) -> list[AccuracyRow]:
    rows = []
    for i, (kind, model) in enumerate(models.items()):
        rows.append(AccuracyRow(kind, model.num_params(), accuracy_by_distance(model, tokenizer, distances, n)))
        if progress:
            progress((i + 1) / len(models))
    return rows


def saved_accuracy(models: dict[str, Checkpoint]) -> dict[str, dict[int, float]]:
    """Accuracy by distance recorded in each shipped model's metadata when it was trained."""
    return {k: {int(d): float(a) for d, a in c.metadata.get("accuracy_by_distance", {}).items()}
            for k, c in models.items()}


def accuracy_rows(acc: dict[str, dict[int, float]], params: dict[str, int]) -> list[dict]:
    return [{"model": name(k), "params": f"{params[k]:,}", **{f"d={d}": f"{a:.2f}" for d, a in by_d.items()}}
            for k, by_d in acc.items()]


def accuracy_lines(acc: dict[str, dict[int, float]], source: str) -> list[dict]:
    style = {LSTM: dict(width=6), TRANSFORMER: dict(dash="dash")}  # both at 1.0: the wide LSTM shows beneath
    return [dict(name=f"{name(k)} ({source})", kind=k, d=list(by_d), accuracy=list(by_d.values()), **style.get(k, {}))
            for k, by_d in acc.items()]


def accuracy_claims(live: dict[str, dict[int, float]], saved: dict[str, dict[int, float]], n: int) -> list[Claim]:
    """Evaluated again now, the accuracy equals what was saved when the models were trained."""
    diff = max(abs(live[k][d] - saved[k].get(d, math.nan)) for k in live for d in live[k])
    return [Fact(diff == 0, f"evaluated now on {n} held-out inputs per distance: largest difference from the "
                            f"accuracy saved when the models were trained is {diff:.3f}")]


def accuracy_text(acc: dict[str, dict[int, float]]) -> str:
    rnn, tr = acc[RNN], acc[TRANSFORMER]
    d0, d1 = min(rnn), max(rnn)
    return (f"The RNN falls off with distance: **{rnn[d0]:.2f}** at d = {d0}, **{rnn[d1]:.2f}** at d = {d1} "
            f"(chance is 1/{len(RECALL_KEYS)} = {CHANCE:.3f}). The transformer is never below "
            f"**{min(tr.values()):.2f}**: attention reads the key in one step, however far back it is.")


def lstm_text(acc: dict[str, dict[int, float]]) -> tuple[bool, str]:
    """(whether the LSTM holds at every distance, the sentence that says how it does)."""
    lstm = acc[LSTM]
    low = min(lstm.values())
    if low >= 0.99:
        return True, (f"**The LSTM does not fail here:** never below {low:.2f}, up to distance {max(lstm)}. The "
                      "lecture's “LSTMs still decay” is about the gradient — the chart in the gradient tab shows its "
                      "slower decay per step — not about this task, whose dependency its additive cell path carries.")
    return False, f"The LSTM holds longer than the RNN but drops to {low:.2f} at its worst distance."
