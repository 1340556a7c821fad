"""The gradient is a product of Jacobians diag(tanh′)·W_hh: the trained RNN's W_hh rescaled on a copy, and an
RNN in its linear regime (tanh′ = 1), where ‖W_hh‖₂ alone sets the rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from viz_model import gradients
from viz_model.checkpoint import Checkpoint
from viz_model.lessons.common import Claim, Fact
from viz_model.lessons.recurrence.by_distance import N_INPUTS, GradientCurve, curve_line, gradient_curve, recall_inputs
from viz_model.lessons.recurrence.models import _np
from viz_model.rnn import RNN, RecurrentLM

W_HH_CHOICES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 6.0, 8.0, 12.0)


GAINS = tuple(round(0.5 + 0.05 * i, 2) for i in range(21))   # 0.50 … 1.50


LINEAR_T, LINEAR_VOCAB = 41, 32


def linear_regime_rnn(gain: float, d_model: int = 16, vocab_size: int = 32, seed: int = 0) -> RecurrentLM:
    """An RNN where ‖W_hh‖₂ alone sets the rate: W_hh = gain x an orthogonal matrix, W_ih orthogonal, no biases,
    inputs of size 1e-6 so that tanh stays in its linear range (tanh' = 1). Then ∂h_T/∂h_t = (gain Q)^(T−t) and
    the gradient by distance is exactly gain^d: it dives below 1 and explodes above 1. A trained RNN saturates
    tanh instead (tanh' < 1 shrinks every step), so scaling its W_hh above 1 rarely makes it explode."""
    if not (math.isfinite(gain) and gain > 0):
        raise ValueError(f"the gain of W_hh must be a positive number, got {gain!r}.")
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # its LM head too from the seed, not from whatever ran before (#27)
        torch.manual_seed(seed)
        model = RecurrentLM(RNN, vocab_size, d_model, 1)
    cell = model.layers[0]
    with torch.no_grad():
        cell.weight_hh_l0.copy_(gain * torch.linalg.qr(torch.randn(d_model, d_model, generator=gen))[0])
        cell.weight_ih_l0.copy_(torch.linalg.qr(torch.randn(d_model, d_model, generator=gen))[0])
        cell.bias_ih_l0.zero_()
        cell.bias_hh_l0.zero_()
        model.tok_emb.weight.copy_(torch.randn(vocab_size, d_model, generator=gen) * 1e-6)
    return model


@dataclass
class RecurrenceView:
    spectral_norm: float                # ‖W_hh‖₂ after rescaling
    curve: GradientCurve
    chain: gradients.JacobianChain      # of the first input


def rescaled_view(model: RecurrentLM, ids: torch.Tensor, target_norm: float | None = None) -> RecurrenceView:
    """The slider: W_hh scaled (on a copy) to spectral norm target_norm (None = as trained), then the gradient
    by distance and the per-step Jacobian norms whose product it is."""
    if target_norm is not None:
        model = gradients.rescale_recurrence(model, target_norm)
    ids = torch.as_tensor(ids)
    ids = ids[None] if ids.ndim == 1 else ids
    return RecurrenceView(gradients.spectral_norm(model), gradient_curve(model, ids),
                          gradients.jacobian_chain(model, ids[0]))


@torch.no_grad()
def mean_tanh_slope(model: RecurrentLM, ids: torch.Tensor) -> float:
    """Mean tanh′ = 1 − h² over the first layer's states on these inputs: 1 in the linear range, near 0 when
    saturated (why a W_hh above 1 need not explode the gradient)."""
    h = model(ids, trace=True).trace.residual[0]  # (n, T, d_model)
    return float((1 - h**2).mean())


def trained_norm(model: RecurrentLM) -> float:
    """The trained RNN's ‖W_hh‖₂, to the slider's two decimals."""
    return round(gradients.spectral_norm(model), 2)


def trained_view(rnn: Checkpoint, distance: int, target: float | None = None) -> tuple[RecurrenceView, float]:
    """The W_hh slider: the shipped RNN (W_hh rescaled on a copy to `target`) on the recall inputs of this
    distance, and its mean tanh′ there."""
    ids = recall_inputs(rnn.tokenizer, distance, n=N_INPUTS)  # (n, distance + 2)
    view = rescaled_view(rnn.model, ids, target)
    model = rnn.model if target is None else gradients.rescale_recurrence(rnn.model, target)
    return view, mean_tanh_slope(model, ids)


def whh_lines(base: RecurrenceView, v: RecurrenceView) -> list[dict]:
    return [curve_line(base.curve, f"as trained (‖W_hh‖₂ {base.spectral_norm:.2f})", kind="trained", dash="dot"),
            curve_line(v.curve, f"‖W_hh‖₂ {v.spectral_norm:.2f} · ×{v.curve.factor_per_step:.2f} per step")]


def chain_series(chain: gradients.JacobianChain) -> tuple[list[float], list[float], list[float]]:
    """(step norms with J_(T−1) first: entry d−1 is the d-th factor of the product, product norms, their bound)."""
    steps = _np(chain.step_norms)[::-1]
    return ([float(v) for v in steps], [float(v) for v in _np(chain.product_norms)],
            [float(v) for v in _np(chain.bound)])


def whh_note(v: RecurrenceView, tanh: float) -> str:
    """Why the rescaled RNN's gradient dives, explodes or, above 1, still shrinks (tanh saturates)."""
    s, f = v.spectral_norm, v.curve.factor_per_step
    steps = _np(v.chain.step_norms)
    head = f"‖W_hh‖₂ = {s:.2f}, gradient ×{f:.3f} per step, mean tanh′ = {tanh:.2f} (1 in its linear range). "
    if s > 1 and f < 1:
        return head + ("W_hh is above 1, yet the gradient **does not explode: tanh saturates**. Each step "
                       "multiplies by diag(tanh′)·W_hh, and the larger W_hh, the more states sit near ±1 where "
                       f"tanh′ ≈ 0. The step norms can exceed 1 (median {float(sorted(steps)[len(steps) // 2]):.2f} "
                       "here) while their product still shrinks: the steps' directions do not line up, so the "
                       "product (blue) falls far below the product of the norms (the grey bound).")
    if f >= 1:
        return head + "Here the gradient grows with distance: the product of the step Jacobians explodes."
    return head + (f"Below 1 the curve dives: each step multiplies by at most ‖W_hh‖₂ · max tanh′ ≤ {s:.2f}, so "
                   f"the product shrinks at least as fast as {s:.2f}^d.")


def linear_view(gain: float) -> RecurrenceView:
    """The linear-regime RNN of this gain on four seeded random inputs."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, LINEAR_VOCAB, (4, LINEAR_T), generator=gen)  # (4, T)
    return rescaled_view(linear_regime_rnn(gain, vocab_size=LINEAR_VOCAB), ids)


def linear_lines(v: RecurrenceView, gain: float) -> list[dict]:
    """The measured gradient and gain^d drawn through its value at distance 1."""
    y = _np(v.curve.norms)
    ds = list(range(len(y)))
    return [curve_line(v.curve, f"measured · slope {v.curve.slope:.4f}", mode="markers", size=7),
            dict(name=f"{gain:.2f}^d (drawn through distance 1)", kind="reference", dash="dot", mode="lines", d=ds,
                 y=[float(y[1] * gain ** (d - 1)) for d in ds])]


def linear_claims(v: RecurrenceView, gain: float) -> list[Claim]:
    ln = math.log(gain)
    return [Fact(abs(v.curve.slope - ln) < 1e-3, f"fitted slope {v.curve.slope:.4f} per step = ln({gain:.2f}) = "
                 f"{ln:.4f}: the gradient is {gain:.2f}^d, one factor ‖J_t‖₂ = "
                 f"{float(_np(v.chain.step_norms).mean()):.3f} per step")]


def linear_text(v: RecurrenceView, gain: float) -> str:
    steps = len(v.curve.norms) - 2
    word = "dives" if gain < 1 else "explodes" if gain > 1 else "stays level"
    return (f"Inputs of size 1e-6 keep tanh′ = 1, and W_hh = {gain:.2f} × an orthogonal matrix, so every step "
            f"multiplies the gradient by exactly {gain:.2f}: it {word} (×{gain ** steps:.2g} over {steps} steps).")
