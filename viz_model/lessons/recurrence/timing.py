"""Forward + backward time against T: the three models timed on one training batch as T doubles, and the
slope of each on log–log axes (the exponent of its growth), on this machine's CPU or GPU."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass

import torch
from torch import nn

from viz_model.device import resolve_device
from viz_model.lessons.common import fit_slope, measured_ago
from viz_model.lessons.recurrence.depth import graph_depth
from viz_model.lessons.recurrence.models import BATCH, REPEATS, RNN, RNN_LAYERS, Progress, _fmt, name
from viz_model.model import eval_mode

LENGTHS = (16, 32, 64, 128, 256, 512, 1024)


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
    gen = torch.Generator().manual_seed(0)
    ms: dict[tuple[str, int], float] = {}
    with ExitStack() as modes:  # timed in train mode, as training runs; each model's own mode restored after
        models = {kind: modes.enter_context(eval_mode(m.to(dev), training=True)) for kind, m in models.items()}
        for i, T in enumerate(lengths):
            for kind, model in models.items():
                ids = torch.randint(1, model.config.vocab_size, (batch_size, T), generator=gen).to(dev)  # (B, T)
                ms[kind, T] = _fwd_bwd_ms(model, ids, repeats)
            if progress:
                progress((i + 1) / len(lengths))
    return [TimingRow(kind, T, ms[kind, T], ms[kind, T] / ms[kind, lengths[0]], model.num_params(), str(dev))
            for kind, model in models.items() for T in lengths]


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
        row["RNN steps"] = f"{graph_depth(RNN, T, RNN_LAYERS).depth:,}"
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


# -- what the page says ------------------------------------------------------------------------------------------
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
