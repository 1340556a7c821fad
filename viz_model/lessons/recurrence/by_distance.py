"""Vanishing gradients by distance: how much the loss at the last position changes with the input t steps
back, ‖∂ℓ/∂x_t‖, for the three trained models on recall inputs (a straight line on the log axis is geometric)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
from torch import nn

from viz_model import gradients
from viz_model.checkpoint import Checkpoint
from viz_model.data import recall_example
from viz_model.lessons.common import Claim, Fact
from viz_model.lessons.recurrence.models import LSTM, RNN, TRANSFORMER, TRANSFORMER_LAYERS, _np, name

N_INPUTS = 16                                          # recall inputs averaged per gradient curve


DISTANCES = range(4, 61)                               # the distance slider's values


def recall_inputs(tokenizer, distance: int, n: int = 16, seed: int = 0) -> torch.Tensor:
    """(n, distance + 2) recall inputs '<bos> key filler.. :' whose last position must name the key."""
    rng = random.Random(30_000 + 1_009 * seed + distance)
    exs = [recall_example(rng, distance) for _ in range(n)]
    return torch.tensor([[tokenizer.token_to_id(w) for w in ("<bos>", *ex.words[:-1])] for ex in exs])


@dataclass
class GradientCurve:
    kind: str
    norms: torch.Tensor       # (T,) entry d: geometric mean over the inputs of ‖∂ℓ/∂x_{T−1−d}‖
    slope: float              # fitted ln(norm) per step over distances 1 … T−2 (0, the query, and <bos> left out)
    factor_per_step: float    # exp(slope): below 1 the gradient shrinks geometrically with distance


def gradient_curve(model: nn.Module, ids: torch.Tensor, kind: str = "") -> GradientCurve:
    """Gradient by distance averaged (geometrically) over a batch of inputs of one length, and its slope."""
    ids = torch.as_tensor(ids)
    ids = ids[None] if ids.ndim == 1 else ids
    logs = gradients.gradient_norms(model, ids).log()  # (n, T): one pass for every input
    norms = gradients.by_distance(logs.mean(0).exp())     # (T,)
    stop = len(norms) - 1 if len(norms) > 3 else None     # distance T−1 is position 0, <bos>
    slope = gradients.log_slope(norms, 1, stop)
    return GradientCurve(kind or getattr(model, "kind", TRANSFORMER), norms, slope, float(torch.tensor(slope).exp()))


def key_ratio(curve: GradientCurve, distance: int) -> float:
    """‖∂ℓ/∂x‖ at the key (distance `distance`) ÷ at distance 1: how much the gradient changed over that span."""
    return float(curve.norms[distance] / curve.norms[1])


def trend(factor: float, tol: float = 0.005) -> str:
    """What multiplying by `factor` does to the gradient: 'grows', 'shrinks', or 'stays level' within ±tol of 1."""
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"a gradient factor must be a positive number, got {factor!r}.")
    return "grows" if factor > 1 + tol else "shrinks" if factor < 1 - tol else "stays level"


def gradient_words(factor_per_step: float, key_ratio: float, distance: int) -> str:
    """One model's gradient by distance in words, from the two numbers the page's table shows: the fitted factor
    per step and ‖∂ℓ/∂x‖ at the key ÷ at distance 1 (distance − 1 steps apart). Each direction word comes from its
    own number, and a fitted trend the key contradicts says so (attention can peak at the key on a falling line)."""
    per_step, overall = trend(factor_per_step), trend(key_ratio)
    span = f"×{key_ratio:.3g} from d=1 to the key, {distance - 1} steps"
    if overall == per_step:
        return f"**{per_step} ×{factor_per_step:.3f} per step** ({span})"
    return f"**{per_step} ×{factor_per_step:.3f} per step** on the fitted line, yet **{overall}** overall ({span})"


def distance_curves(models: dict[str, Checkpoint], distance: int, n: int = N_INPUTS) -> dict[str, GradientCurve]:
    """Each shipped model's gradient by distance on n recall inputs whose key is `distance` back."""
    ids = recall_inputs(models[RNN].tokenizer, distance, n=n)  # (n, distance + 2)
    return {k: gradient_curve(c.model, ids, k) for k, c in models.items()}


def curve_line(c: GradientCurve, label: str, relative: bool = False, **extra) -> dict:
    """A gradient chart's line: the curve by distance, divided by its value at distance 1 when `relative`."""
    y = _np(c.norms)
    if relative:
        y = y / y[1]
    return {"name": label, "kind": c.kind, "d": list(range(len(y))), "y": [float(v) for v in y], **extra}


def gradient_rows(cs: dict[str, GradientCurve], distance: int) -> list[dict]:
    rows = []
    for k, c in cs.items():
        n = _np(c.norms)
        rows.append({"model": name(k), "slope ln/step": f"{c.slope:.3f}", "factor per step": f"{c.factor_per_step:.3f}",
                     "‖∂ℓ/∂x‖ at d=1": f"{n[1]:.2e}", f"at the key (d={distance})": f"{n[distance]:.2e}",
                     "key ÷ d=1": f"{key_ratio(c, distance):.3g}"})
    return rows


def gradient_text(cs: dict[str, GradientCurve], distance: int) -> str:
    """The curves in words, from the table's own numbers: its factor per step and its key ÷ d=1."""
    words = {k: gradient_words(c.factor_per_step, key_ratio(c, distance), distance) for k, c in cs.items()}
    return (f"Fitted over distances 1 … {distance} (0 is the ':' itself, {distance + 1} the `<bos>`): the RNN's "
            f"gradient {words[RNN]}; the LSTM's (its additive cell path) {words[LSTM]}; the transformer's "
            f"{words[TRANSFORMER]}: every position is at most {TRANSFORMER_LAYERS} layers from the output, "
            "and attention reads the key directly.")


def gradient_claims(cs: dict[str, GradientCurve]) -> list[Claim]:
    rnn, lstm = cs[RNN], cs[LSTM]
    return [Fact(rnn.factor_per_step < lstm.factor_per_step, f"the RNN's gradient keeps less per step than the "
                 f"LSTM's (×{rnn.factor_per_step:.3f} vs ×{lstm.factor_per_step:.3f})")]
