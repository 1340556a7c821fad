"""How far back a gradient reaches: ‖∂ℓ/∂x_t‖ by distance, and an RNN's chain of step Jacobians.

Backpropagation through time multiplies one Jacobian ∂h_t/∂h_{t−1} per step, so an RNN's gradient shrinks or
grows geometrically with distance; a transformer reaches every position through at most L layers.
"""

from __future__ import annotations

import copy
import math
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.model import eval_mode
from viz_model.rnn import RecurrentLM

# A forward hook and eval() act on the module itself, which the app's sessions share: a second thread's hook would
# replace this thread's captured leaf (measured: "the differentiated Tensor ... not used in the graph" under load).
# The lock keeps two gradient runs apart; the hook also ignores forwards from other threads (any other view of the
# same model, e.g. the Jacobian chain, runs tok_emb without taking the lock).
_SHARED_MODULE = threading.Lock()


def _one_sequence(ids: torch.Tensor) -> torch.Tensor:
    ids = torch.as_tensor(ids)
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.shape[0] != 1:
        raise ValueError(f"give one sequence of token ids (shape (T,) or (1, T)), got shape {tuple(ids.shape)}.")
    if ids.shape[1] < 1:
        raise ValueError("the input has no tokens.")
    return ids  # (1, T)


def gradient_by_distance(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """(T,) ‖∂ℓ/∂x_t‖ for t = 0 … T−1: entry T−1−d is distance d from the last position.

    ℓ = cross-entropy of the last position's prediction against its own argmax token; x_t = the output of
    model.tok_emb at position t (captured by a forward hook, so the model's code is untouched). Works for
    TinyTransformer and RecurrentLM; the model is run in eval mode and its weights need no gradient.
    """
    return gradient_norms(model, _one_sequence(ids))[0]


def gradient_norms(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """(B, T): gradient_by_distance of each row of ids (B, T), in one forward and backward pass.

    The rows never interact (attention and recurrence run within a row, eval mode), so the gradient of the sum
    of the B losses with respect to row b's embeddings is row b's own gradient."""
    ids = torch.as_tensor(ids)
    if ids.ndim != 2 or ids.shape[1] < 1:
        raise ValueError(f"give token ids of shape (B, T) with T ≥ 1, got shape {tuple(ids.shape)}.")
    ids = ids.to(model.device)
    captured: list[torch.Tensor] = []
    me = threading.get_ident()

    def capture(_module, _inputs, output):
        if threading.get_ident() != me:  # another session's forward on the shared model, while the hook is on
            return None                  # (None keeps its output as it is)
        x = output.detach().requires_grad_(True)  # (B, T, d_model): a leaf we can differentiate against
        captured.append(x)
        return x

    with _SHARED_MODULE:
        return _gradient_norms(model, ids, capture, captured)


def _gradient_norms(model: nn.Module, ids: torch.Tensor, capture, captured: list[torch.Tensor]) -> torch.Tensor:
    handle = model.tok_emb.register_forward_hook(capture)
    try:
        with eval_mode(model), torch.enable_grad():
            # The loss in float64: a confident model's top probability is 1 − ε with ε ~ 1e-9, which float32 rounds to
            # 1 or to one ulp below it, so the gradient 1 − p (and every gradient behind it) was rounding noise: the
            # LSTM's ‖∂ℓ/∂x‖ read 4.4e-10 for a true 6.0e-10, the transformer's 9.3e-9 for 3.0e-8, and another CPU
            # kernel moved them by 10 % (#38). The model itself stays float32 (within 3e-4 of a float64 copy).
            logits = model(ids).logits[:, -1].double()  # (B, vocab)
            loss = F.cross_entropy(logits, logits.argmax(-1).detach(), reduction="sum")
            (grad,) = torch.autograd.grad(loss, captured[0])  # (B, T, d_model)
    finally:
        handle.remove()
    return grad.norm(dim=-1).detach().cpu()  # (B, T)


def by_distance(per_position: torch.Tensor) -> torch.Tensor:
    """Reorder a (T,) per-position profile so that entry d is distance d from the last position."""
    return per_position.flip(0)


def log_slope(norms_by_distance: torch.Tensor, start: int = 1, stop: int | None = None) -> float:
    """Least-squares slope of ln(norm) against distance over [start, stop): ln of the factor per step.

    Below 0: the gradient shrinks geometrically with distance (by exp(slope) per step); above 0: it grows.
    Entries that are 0 (a gradient that underflowed float32) or not finite are left out of the fit.
    """
    y = norms_by_distance[start:stop].double()
    d = torch.arange(start, start + len(y), dtype=torch.float64)
    keep = torch.isfinite(y) & (y > 0)
    if int(keep.sum()) < 2:
        raise ValueError("fitting a slope needs at least two distances with a nonzero gradient.")
    d, y = d[keep], torch.log(y[keep])
    d, y = d - d.mean(), y - y.mean()
    return float((d * y).sum() / (d * d).sum())


# -- the RNN's chain of Jacobians ------------------------------------------------------------------
def _check_recurrent(model: nn.Module, layer: int) -> RecurrentLM:
    if not isinstance(model, RecurrentLM):
        raise ValueError("step Jacobians ∂h_t/∂h_(t-1) exist only for a recurrent model (RNN or LSTM).")
    model.weight_hh(layer)  # validates the layer index
    return model


def _step(rnn: nn.Module, x: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """One step of torch's own module: (B, d_in), (B, S) -> (B, S); S = H (RNN) or 2H = [h, c] (LSTM)."""
    if isinstance(rnn, nn.LSTM):
        h, c = state.chunk(2, dim=-1)                                  # each (B, H)
        _, (h, c) = rnn(x[:, None], (h[None].contiguous(), c[None].contiguous()))
        return torch.cat([h[0], c[0]], dim=-1)                         # (B, 2H)
    _, h = rnn(x[:, None], state[None].contiguous())
    return h[0]                                                        # (B, H)


@torch.no_grad()
def _layer_run(model: RecurrentLM, ids: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's inputs (T, d_in) and its states after each step (T, S), run step by step from zero."""
    x = model.tok_emb(ids)                            # (1, T, d_model)
    for rnn in model.layers[:layer]:
        x, _ = rnn(x)
    rnn, xs = model.layers[layer], x[0]               # (T, d_in)
    H = rnn.hidden_size
    state = torch.zeros(1, 2 * H if isinstance(rnn, nn.LSTM) else H, device=xs.device)
    states = []
    for t in range(len(xs)):
        state = _step(rnn, xs[t:t + 1], state)        # (1, S)
        states.append(state[0])
    return xs, torch.stack(states)                    # (T, d_in), (T, S)


def step_jacobians(model: RecurrentLM, ids: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """(T−1, S, S) J_t = ∂s_t/∂s_{t−1} for t = 1 … T−1, s the layer's state (h, or [h, c] for an LSTM).

    All steps in one backward pass: each row of a batch is a copy of s_{t−1}, and row i of step t receives
    the output gradient e_i, so its input gradient is row i of J_t (rows of a batch never mix).
    """
    model = _check_recurrent(model, layer)
    ids = _one_sequence(ids).to(model.device)
    if ids.shape[1] < 2:
        raise ValueError("a step Jacobian needs at least two tokens.")
    rnn = model.layers[layer]
    xs, states = _layer_run(model, ids, layer)        # (T, d_in), (T, S)
    n, S = len(xs) - 1, states.shape[1]
    with torch.enable_grad():
        prev = states[:-1].repeat_interleave(S, dim=0).requires_grad_(True)  # (n*S, S)
        out = _step(rnn, xs[1:].repeat_interleave(S, dim=0), prev)          # (n*S, S)
        eye = torch.eye(S, device=xs.device).repeat(n, 1)                     # (n*S, S)
        (rows,) = torch.autograd.grad(out, prev, grad_outputs=eye)
    return rows.view(n, S, S).detach()                # J[t-1][i, j] = ∂s_t[i] / ∂s_{t-1}[j]


@dataclass
class JacobianChain:
    step_norms: torch.Tensor     # (T-1,) ‖∂s_t/∂s_{t−1}‖₂ for t = 1 … T−1
    product_norms: torch.Tensor  # (T,) entry d: ‖∂s_{T−1}/∂s_{T−1−d}‖₂ = ‖J_{T−1} ⋯ J_{T−d}‖₂ (d = 0: 1)
    bound: torch.Tensor          # (T,) entry d: the product of those d step norms (never below product_norms)


def jacobian_chain(model: RecurrentLM, ids: torch.Tensor, layer: int = 0) -> JacobianChain:
    """The per-step Jacobian norms and the norm of their running product, from the last step backwards."""
    J = step_jacobians(model, ids, layer).double().cpu()       # (T-1, S, S)
    step_norms = torch.linalg.matrix_norm(J, ord=2)            # (T-1,)
    prod = torch.eye(J.shape[1], dtype=torch.float64)
    products = [1.0]
    for t in range(len(J) - 1, -1, -1):                        # J_{T-1}, then J_{T-1} J_{T-2}, ...
        prod = prod @ J[t]
        products.append(float(torch.linalg.matrix_norm(prod, ord=2)))
    bound = torch.cat([torch.ones(1, dtype=torch.float64), torch.cumprod(step_norms.flip(0), 0)])
    return JacobianChain(step_norms.float(), torch.tensor(products, dtype=torch.float32), bound.float())


def spectral_norm(model: RecurrentLM, layer: int = 0) -> float:
    """‖W_hh‖₂ of one layer (an LSTM's stacks its four gates: a (4H, H) matrix)."""
    w = _check_recurrent(model, layer).weight_hh(layer).detach()
    return float(torch.linalg.matrix_norm(w.double().cpu(), ord=2))


def rescale_recurrence(model: RecurrentLM, target_norm: float, layer: int = 0) -> RecurrentLM:
    """A copy of the model whose W_hh (one layer) is scaled to spectral norm target_norm; the original is kept."""
    model = _check_recurrent(model, layer)
    if not (isinstance(target_norm, (int, float)) and math.isfinite(target_norm) and target_norm > 0):
        raise ValueError(f"the spectral norm to scale W_hh to must be a positive number, got {target_norm!r}.")
    current = spectral_norm(model, layer)
    if current == 0.0:
        raise ValueError("W_hh is all zeros: there is nothing to rescale.")
    clone = copy.deepcopy(model)
    with torch.no_grad():
        clone.weight_hh(layer).mul_(target_norm / current)
    return clone


__all__ = ["JacobianChain", "by_distance", "gradient_by_distance", "gradient_norms", "jacobian_chain", "log_slope",
           "rescale_recurrence", "spectral_norm", "step_jacobians"]
