"""RNN vs transformer, measured: sequential depth, fwd+bwd time against T, gradient and accuracy by distance."""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from viz_model import ASSETS_DIR, checkpoint, gradients
from viz_model.checkpoint import Checkpoint
from viz_model.config import ModelConfig
from viz_model.data import RECALL_KEYS, TASK_LABELS, recall_example
from viz_model.device import resolve_device
from viz_model.lessons.common import Claim, Fact, fit_slope, measured_ago
from viz_model.model import TinyTransformer
from viz_model.rnn import RecurrentLM
from viz_model.train import RECALL_DISTANCES, accuracy_by_distance

KINDS = ("rnn", "lstm", "transformer")
KIND_NAMES = {"rnn": "RNN", "lstm": "LSTM", "transformer": "transformer"}
LENGTHS = (16, 32, 64, 128, 256, 512, 1024)
Progress = Callable[[float], None] | None

# What the page measures: the timed models (comparable_models), the recall inputs and the sliders' values.
D_MODEL, TRANSFORMER_LAYERS, RNN_LAYERS = 64, 2, 1
VOCAB, BATCH, REPEATS = 256, 8, 3
LAYERS = {"rnn": RNN_LAYERS, "lstm": RNN_LAYERS, "transformer": TRANSFORMER_LAYERS}
N_INPUTS = 16                                          # recall inputs averaged per gradient curve
DISTANCES = range(4, 61)                               # the distance slider's values
W_HH_CHOICES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 6.0, 8.0, 12.0)
GAINS = tuple(round(0.5 + 0.05 * i, 2) for i in range(21))   # 0.50 … 1.50
LINEAR_T, LINEAR_VOCAB = 41, 32
CHANCE = 1 / len(RECALL_KEYS)


def name(kind: str) -> str:
    return KIND_NAMES.get(kind, kind)


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _np(x) -> np.ndarray:
    return x.detach().float().cpu().numpy()


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


def load_shipped(device: str | torch.device = "cpu", read_only: bool = False) -> dict[str, Checkpoint]:
    """The three shipped recall models; `read_only` freezes their weights (a server shares them with every user)."""
    models = {kind: checkpoint.load_checkpoint(shipped_path(kind), device) for kind in KINDS}
    for ckpt in models.values() if read_only else ():
        ckpt.model.requires_grad_(False)
    return models


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
    with torch.random.fork_rng(devices=[]):  # its LM head too from the seed, not from whatever ran before (#27)
        torch.manual_seed(seed)
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


# -- 1. what the page shows of the depth and the timing --------------------------------------------------
def depth_lines(T: int) -> list[dict]:
    """The depth chart's lines: the RNN's and the transformer's steps at every power of two to 1,024 and at T."""
    Ts = sorted({2**i for i in range(11)} | {T})
    return [dict(name=f"{name(k)} ({graph_depth(k, 1, LAYERS[k]).formula}, L = {LAYERS[k]})", kind=k, T=Ts,
                 depth=[graph_depth(k, t, LAYERS[k]).depth for t in Ts]) for k in ("rnn", "transformer")]


def depth_text(T: int) -> str:
    rnn, tr = graph_depth("rnn", T, RNN_LAYERS), graph_depth("transformer", T, TRANSFORMER_LAYERS)
    return (f"The RNN's h_t = f(x_t, h_(t−1)) cannot start before h_(t−1) is done, even in training, where "
            f"every x_t is known: **{rnn.depth:,}** steps one after another for T = {T:,} (the LSTM alike). "
            f"The transformer computes all {T:,} positions of a layer at once from the layer below: "
            f"**{tr.depth}** steps, whatever T is.")


def work_text(T: int, d: int = D_MODEL) -> str:
    """O(n·d²) against O(n²·d), in words, with this T and the timed models' d."""
    rnn, attn = T * d * d, T * T * d
    more = "more" if attn > rnn else "fewer" if attn < rnn else "as many"
    return (f"**Work, not depth.** An RNN does **O(n·d²)**: one d×d matrix times a vector per step, n steps. "
            f"Attention does **O(n²·d)**: a d-long dot product for every pair of positions. With n = {T:,} and "
            f"d = {d}: n·d² = {rnn:,} and n²·d = {attn:,} multiply-adds, so attention does **{more}** "
            f"(n/d = {T / d:.3g}); they cross at n = d. The transformer's own projections and MLP are "
            "O(n·d²) too; the n² term is what attention adds, and all of it can run at once.")


def _series(rows: list[TimingRow]) -> dict[str, tuple[list[int], list[float]]]:
    kinds = dict.fromkeys(r.kind for r in rows)
    return {k: ([r.T for r in rows if r.kind == k], [r.ms for r in rows if r.kind == k]) for k in kinds}


def timing_slopes(rows: list[TimingRow]) -> tuple[dict[str, float | None], list[int]]:
    """Each model's log–log slope of ms against T over the longer half of the lengths (past the fixed overheads),
    and those lengths."""
    series = _series(rows)
    first = series[rows[0].kind][0]
    upper = sorted(first)[(len(first) - 1) // 2:]
    return {k: fit_slope(*zip(*[(t, ms) for t, ms in zip(*s) if t in upper])) for k, s in series.items()}, upper


def timing_lines(rows: list[TimingRow], slopes: dict[str, float | None]) -> list[dict]:
    return [dict(name=f"{name(k)} · slope {'n/a' if slopes[k] is None else f'{slopes[k]:.2f}'}", kind=k, T=Ts,
                 ms=ms) for k, (Ts, ms) in _series(rows).items()]


def timing_caption(rows: list[TimingRow], when: float, wall_s: float, upper: list[int]) -> str:
    params = ", ".join(f"{name(k)} {next(r.params for r in rows if r.kind == k):,}" for k in _series(rows))
    ago = measured_ago(when)
    return (f"Measured on **{rows[0].device.upper()}** {ago} (took {wall_s:.0f} s): median of {REPEATS} runs "
            f"of one batch of {BATCH} after a warm-up. Parameters: {params} (the RNN and LSTM sized to the "
            f"transformer's count). Slope of the log–log fit over T = {upper[0]:,} … {upper[-1]:,}: 1 = time "
            "doubles with T.")


def timing_rows(rows: list[TimingRow]) -> list[dict]:
    """The timing table: one row per T, each model's ms and its ratio to the shortest T, and the RNN's steps."""
    by = {(r.kind, r.T): r for r in rows}
    kinds, Ts = list(dict.fromkeys(r.kind for r in rows)), list(dict.fromkeys(r.T for r in rows))
    table = []
    for T in Ts:
        row = {"T": f"{T:,}"}
        for k in kinds:
            row[f"{name(k)} ms"] = _fmt(by[k, T].ms)
            row[f"{name(k)} × T={Ts[0]}"] = f"{by[k, T].ratio:.3g}"
        row["RNN steps"] = f"{graph_depth('rnn', T, RNN_LAYERS).depth:,}"
        table.append(row)
    return table


def timing_drops(rows: list[TimingRow]) -> str | None:
    """A note on every length where a model's time fell by more than 10 % as T grew (the machine was busy)."""
    drops = [f"{name(k)} T = {a:,} → {b:,}" for k, (Ts, ms) in _series(rows).items()
             for a, b, x, y in zip(Ts, Ts[1:], ms, ms[1:]) if y < 0.9 * x]
    if not drops:
        return None
    return ("Time fell as T grew (" + "; ".join(drops) + "): other work on this machine got in the way of "
            "those runs. The models take turns at each T, so they were slowed alike; *Time again* for a "
            "steadier curve.")


def timing_shows(rows: list[TimingRow], slopes: dict[str, float | None]) -> str | None:
    """What this run shows, from its numbers: the slopes' shape and the slowest model at the longest T (None
    when only one length was timed)."""
    T_max = max(r.T for r in rows)
    last = {r.kind: r.ms for r in rows if r.T == T_max}
    slowest = max(last, key=last.get)
    fitted = [s for s in slopes.values() if s is not None]
    if not fitted:
        return None
    shape = ("all three grow **roughly linearly** in T" if all(0.7 <= s <= 1.3 for s in fitted)
             else "their slopes are " + ", ".join(f"{name(k)} {s:.2f}" for k, s in slopes.items() if s is not None))
    on = "this CPU" if rows[0].device == "cpu" else f"this {rows[0].device.upper()} device"
    return (f"**What {on} shows:** {shape}, and at T = {T_max:,} the **{name(slowest)}** is the slowest "
            f"(" + ", ".join(f"{name(k)} {_fmt(v)} ms" for k, v in last.items()) + ").")


def gpu_hint() -> str:
    if torch.cuda.is_available():
        return (f"This server has a GPU ({torch.cuda.get_device_name(0)}): choose **cuda** as the sidebar's Device "
                "and time again.")
    return "There is no GPU on this server (`torch.cuda.is_available()` is False), so only the CPU is timed."


# -- 2. what the page shows of the gradients ------------------------------------------------------------
def distance_curves(models: dict[str, Checkpoint], distance: int, n: int = N_INPUTS) -> dict[str, GradientCurve]:
    """Each shipped model's gradient by distance on n recall inputs whose key is `distance` back."""
    ids = recall_inputs(models["rnn"].tokenizer, distance, n=n)  # (n, distance + 2)
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
            f"gradient {words['rnn']}; the LSTM's (its additive cell path) {words['lstm']}; the transformer's "
            f"{words['transformer']}: every position is at most {TRANSFORMER_LAYERS} layers from the output, "
            "and attention reads the key directly.")


def gradient_claims(cs: dict[str, GradientCurve]) -> list[Claim]:
    rnn, lstm = cs["rnn"], cs["lstm"]
    return [Fact(rnn.factor_per_step < lstm.factor_per_step, f"the RNN's gradient keeps less per step than the "
                 f"LSTM's (×{rnn.factor_per_step:.3f} vs ×{lstm.factor_per_step:.3f})")]


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


# -- 3. what the page shows of the recall task ----------------------------------------------------------
def saved_accuracy(models: dict[str, Checkpoint]) -> dict[str, dict[int, float]]:
    """Accuracy by distance recorded in each shipped model's metadata when it was trained."""
    return {k: {int(d): float(a) for d, a in c.metadata.get("accuracy_by_distance", {}).items()}
            for k, c in models.items()}


def accuracy_rows(acc: dict[str, dict[int, float]], params: dict[str, int]) -> list[dict]:
    return [{"model": name(k), "params": f"{params[k]:,}", **{f"d={d}": f"{a:.2f}" for d, a in by_d.items()}}
            for k, by_d in acc.items()]


def accuracy_lines(acc: dict[str, dict[int, float]], source: str) -> list[dict]:
    style = {"lstm": dict(width=6), "transformer": dict(dash="dash")}  # both at 1.0: the wide LSTM shows beneath
    return [dict(name=f"{name(k)} ({source})", kind=k, d=list(by_d), accuracy=list(by_d.values()), **style.get(k, {}))
            for k, by_d in acc.items()]


def accuracy_claims(live: dict[str, dict[int, float]], saved: dict[str, dict[int, float]], n: int) -> list[Claim]:
    """Evaluated again now, the accuracy equals what was saved when the models were trained."""
    diff = max(abs(live[k][d] - saved[k].get(d, math.nan)) for k in live for d in live[k])
    return [Fact(diff == 0, f"evaluated now on {n} held-out inputs per distance: largest difference from the "
                            f"accuracy saved when the models were trained is {diff:.3f}")]


def accuracy_text(acc: dict[str, dict[int, float]]) -> str:
    rnn, tr = acc["rnn"], acc["transformer"]
    d0, d1 = min(rnn), max(rnn)
    return (f"The RNN falls off with distance: **{rnn[d0]:.2f}** at d = {d0}, **{rnn[d1]:.2f}** at d = {d1} "
            f"(chance is 1/{len(RECALL_KEYS)} = {CHANCE:.3f}). The transformer is never below "
            f"**{min(tr.values()):.2f}**: attention reads the key in one step, however far back it is.")


def lstm_text(acc: dict[str, dict[int, float]]) -> tuple[bool, str]:
    """(whether the LSTM holds at every distance, the sentence that says how it does)."""
    lstm = acc["lstm"]
    low = min(lstm.values())
    if low >= 0.99:
        return True, (f"**The LSTM does not fail here:** never below {low:.2f}, up to distance {max(lstm)}. The "
                      "lecture's “LSTMs still decay” is about the gradient — the chart in the gradient tab shows its "
                      "slower decay per step — not about this task, whose dependency its additive cell path carries.")
    return False, f"The LSTM holds longer than the RNN but drops to {low:.2f} at its worst distance."


def trained_text(meta: dict) -> str:
    return (f"These models were trained for {meta.get('steps', '?')} steps (seed {meta.get('seed', '?')}) on "
            f"the task *{TASK_LABELS['recall']}*. On the Train page that task trains an RNN, an LSTM or a "
            "transformer in front of you: pick the model kind, or run all three side by side under "
            "*Compare setups → RNN vs LSTM vs transformer*.")


# -- what the page says ---------------------------------------------------------------------------------
ONE_LENGTH = "Only one length was timed, so there is no growth to read. Widen the range of T."
ON_A_CPU = ("On a CPU a few cores do all the arithmetic, so the transformer's T independent positions "
            "still pass through the same few cores: computing them \"at once\" saves little, and attention "
            "adds its T² work on top. The RNN's T steps are sequential, but each is a small matrix-vector "
            "product a CPU does quickly. **A GPU shows more:** the transformer's T positions are one "
            "batched matmul that thousands of cores share, so its time stays nearly flat until the chip "
            "is full, while the RNN's T steps still run one after another, each a kernel that cannot start "
            "before the last one ends.")
ON_A_GPU = ("Here the transformer's T positions are one batched matmul the GPU's cores share, while the "
            "RNN's T steps run one after another, each waiting for the one before: a flatter slope for "
            "the transformer is the parallelism; the RNN's slope near 1 is its T sequential steps.")


__all__ = ["AccuracyRow", "GradientCurve", "GraphDepth", "KINDS", "KIND_NAMES", "LENGTHS", "RecurrenceView",
           "TimingRow", "accuracy_claims", "accuracy_lines", "accuracy_rows", "accuracy_table", "accuracy_text",
           "chain_series", "comparable_models", "curve_line", "depth_lines", "depth_text", "distance_curves",
           "gpu_hint", "gradient_claims", "gradient_curve", "gradient_rows", "gradient_text", "graph_depth",
           "linear_claims", "linear_lines", "linear_regime_rnn", "linear_text", "linear_view", "load_shipped",
           "lstm_text", "mean_tanh_slope", "name", "recall_inputs", "rescaled_view", "saved_accuracy", "shipped_path",
           "time_forward_backward", "timing_caption", "timing_drops", "timing_lines", "timing_rows", "timing_shows",
           "timing_slopes", "trained_norm", "trained_text", "trained_view", "whh_lines", "whh_note", "work_text"]
