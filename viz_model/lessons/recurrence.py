"""RNN vs transformer, measured: sequential depth, fwd+bwd time against T, gradient and accuracy by distance."""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from viz_model import ASSETS_DIR, checkpoint, gradients
from viz_model.checkpoint import Checkpoint
from viz_model.config import ModelConfig
from viz_model.data import recall_example
from viz_model.device import resolve_device
from viz_model.model import TinyTransformer
from viz_model.rnn import RecurrentLM
from viz_model.train import RECALL_DISTANCES, accuracy_by_distance

KINDS = ("rnn", "lstm", "transformer")
LENGTHS = (16, 32, 64, 128, 256, 512, 1024)
Progress = Callable[[float], None] | None


# -- 1. sequential dependency ----------------------------------------------------------------------
@dataclass
class GraphDepth:
    kind: str
    T: int
    n_layers: int
    depth: int      # operations on the longest chain, each waiting for the one before: RNN T + L − 1, transformer L
    formula: str


def graph_depth(kind: str, T: int, n_layers: int) -> GraphDepth:
    """An RNN's cell (layer l, step t) needs (l, t−1) and (l−1, t): its longest chain has T + L − 1 cells (T for
    one layer). A transformer layer computes all T positions at once from the layer below: L steps."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    if T < 1 or n_layers < 1:
        raise ValueError("T and the number of layers must be at least 1.")
    if kind == "transformer":
        return GraphDepth(kind, T, n_layers, n_layers, "L")
    return GraphDepth(kind, T, n_layers, T + n_layers - 1, "T + L - 1")


def _recurrent_hidden(kind: str, target_params: int, vocab_size: int, n_layers: int) -> int:
    """The hidden width whose RecurrentLM has the parameter count closest to target_params."""
    gates = 4 if kind == "lstm" else 1
    def count(h: int) -> int:
        return 2 * vocab_size * h + n_layers * gates * (2 * h * h + 2 * h)  # embedding + head + cells
    return min(range(4, 1025, 4), key=lambda h: abs(count(h) - target_params))


def comparable_models(vocab_size: int = 256, d_model: int = 64, n_layers: int = 2, max_len: int = 1024,
                      rnn_layers: int = 1, seed: int = 0) -> dict[str, nn.Module]:
    """A transformer (d_model, n_layers, RoPE) and an RNN and an LSTM sized to about its parameter count."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab_size, d_model=d_model, n_heads=max(1, d_model // 16), n_layers=n_layers,
                      d_ff=4 * d_model, max_len=max_len, tie_weights=False)
    transformer = TinyTransformer(cfg)
    target = transformer.num_params()
    return {kind: RecurrentLM(kind, vocab_size, _recurrent_hidden(kind, target, vocab_size, rnn_layers), rnn_layers)
            for kind in ("rnn", "lstm")} | {"transformer": transformer}


@dataclass
class TimingRow:
    kind: str
    T: int
    ms: float            # median forward + backward time of one batch
    ratio: float         # ms / ms at the shortest T for this model
    params: int
    device: str


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fwd_bwd_ms(model: nn.Module, ids: torch.Tensor, repeats: int) -> float:
    times = []
    for i in range(repeats + 1):  # the first run warms up kernels and allocators, and is not counted
        _sync(ids.device)
        t0 = time.perf_counter()
        model(ids, targets=ids).loss.backward()
        _sync(ids.device)
        if i:
            times.append((time.perf_counter() - t0) * 1e3)
        model.zero_grad(set_to_none=True)
    return statistics.median(times)


def time_forward_backward(models: dict[str, nn.Module], lengths: Sequence[int] = LENGTHS, batch_size: int = 8,
                          device: str | torch.device = "auto", repeats: int = 3,
                          progress: Progress = None) -> list[TimingRow]:
    """Forward + backward ms of one (batch_size, T) batch for every model and length, on `device`. The models
    take turns at each length, so a busy machine slows them alike; rows come out grouped by model."""
    dev = resolve_device(device)
    models = {kind: model.to(dev).train() for kind, model in models.items()}
    gen = torch.Generator().manual_seed(0)
    ms: dict[tuple[str, int], float] = {}
    for i, T in enumerate(lengths):
        for kind, model in models.items():
            ids = torch.randint(1, model.config.vocab_size, (batch_size, T), generator=gen).to(dev)  # (B, T)
            ms[kind, T] = _fwd_bwd_ms(model, ids, repeats)
        if progress:
            progress((i + 1) / len(lengths))
    return [TimingRow(kind, T, ms[kind, T], ms[kind, T] / ms[kind, lengths[0]], model.num_params(), str(dev))
            for kind, model in models.items() for T in lengths]


# -- 2. gradients by distance ------------------------------------------------------------------------
def shipped_path(kind: str):
    """Where the shipped recall model of this kind lives (assets/models/recurrence/KIND.safetensors)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    return ASSETS_DIR / "models" / "recurrence" / f"{kind}.safetensors"


def load_shipped(device: str | torch.device = "cpu") -> dict[str, Checkpoint]:
    return {kind: checkpoint.load_checkpoint(shipped_path(kind), device) for kind in KINDS}


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
    return GradientCurve(kind or getattr(model, "kind", "transformer"), norms, slope, float(torch.tensor(slope).exp()))


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


def linear_regime_rnn(gain: float, d_model: int = 16, vocab_size: int = 32, seed: int = 0) -> RecurrentLM:
    """An RNN where ‖W_hh‖₂ alone sets the rate: W_hh = gain x an orthogonal matrix, W_ih orthogonal, no biases,
    inputs of size 1e-6 so that tanh stays in its linear range (tanh' = 1). Then ∂h_T/∂h_t = (gain Q)^(T−t) and
    the gradient by distance is exactly gain^d: it dives below 1 and explodes above 1. A trained RNN saturates
    tanh instead (tanh' < 1 shrinks every step), so scaling its W_hh above 1 rarely makes it explode."""
    if not (math.isfinite(gain) and gain > 0):
        raise ValueError(f"the gain of W_hh must be a positive number, got {gain!r}.")
    gen = torch.Generator().manual_seed(seed)
    model = RecurrentLM("rnn", vocab_size, d_model, 1)
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


# -- 3. the task where that matters --------------------------------------------------------------------
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


@torch.no_grad()
def mean_tanh_slope(model: RecurrentLM, ids: torch.Tensor) -> float:
    """Mean tanh′ = 1 − h² over the first layer's states on these inputs: 1 in the linear range, near 0 when
    saturated (why a W_hh above 1 need not explode the gradient)."""
    h = model(ids, trace=True).trace.residual[0]  # (n, T, d_model)
    return float((1 - h**2).mean())


__all__ = ["AccuracyRow", "GradientCurve", "GraphDepth", "KINDS", "LENGTHS", "RecurrenceView", "TimingRow",
           "accuracy_table", "comparable_models", "gradient_curve", "graph_depth", "linear_regime_rnn",
           "load_shipped", "mean_tanh_slope", "recall_inputs", "rescaled_view", "shipped_path", "time_forward_backward"]
