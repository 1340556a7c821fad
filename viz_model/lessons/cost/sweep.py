"""One attention layer against T: time and peak memory of the traced path (it keeps the T×T matrix) and of SDPA
as T doubles, a T skipped where the guard predicts it would not fit, and slopes fitted on log–log axes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from viz_model.attention import MultiHeadAttention
from viz_model.device import resolve_device
from viz_model.lessons.common import fit_slope
from viz_model.lessons.cost.measure import (
    CPU_MEMORY_METHOD,
    CUDA_MEMORY_METHOD,
    _is_oom,
    available_memory,
    device_name,
    peak_bytes,
    time_ms,
)

PATHS = ("materialised", "sdpa")          # traced path (keeps the T×T matrix) | F.scaled_dot_product_attention
MODES = ("forward", "forward+backward")
DEFAULT_TS = (64, 128, 256, 512, 1024, 2048, 4096)
MEMORY_FRACTION = 0.5                      # a T is skipped when its predicted peak exceeds this share of free memory

# Upper bounds for the guard, in units of one T×T score matrix (B·H·T²·bytes), set above what this code measures
# (tests/test_cost.py checks that the measured peak stays below the prediction). Forward, traced: scores,
# scores + mask and probs are alive together (measured 3.0 units, plus the masks); the backward adds the gradients
# of probs and scores (measured 4.0 units). The boolean and the additive T×T causal mask are shared by heads and
# sequences (1 + bytes per entry, per T²). SDPA never builds a T×T tensor.
TT_UNITS = {("materialised", "forward"): 4, ("materialised", "forward+backward"): 6}
LINEAR_UNITS = {"forward": 16, "forward+backward": 40}  # (B, T, d_model)-sized tensors: x, q, k, v, out, grads
SLACK_BYTES = 32 * 2**20                   # kernel scratch (SDPA's per-thread blocks), weights and their grads
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class CostRow:
    """One measurement: a path and mode at one sequence length. ms/peak_mb are None when skipped."""

    T: int
    path: str              # "materialised" | "sdpa"
    mode: str              # "forward" | "forward+backward"
    ms: float | None       # median wall time of `repeats` runs after a warm-up
    peak_mb: float | None  # peak memory of one run (see CostSweep.memory_method), MB = 2**20 bytes
    predicted_mb: float    # the guard's upper bound for this run
    skipped: str = ""      # why it was not measured ("" when measured)


@dataclass(frozen=True)
class Slope:
    """Least-squares slope of log(y) against log(T): 1 = linear, 2 = quadratic."""

    path: str
    mode: str
    time: float | None     # None when fewer than two points were measured
    memory: float | None
    fit_Ts: tuple[int, ...]


@dataclass
class CostSweep:
    device: str                          # e.g. "NVIDIA H200" or "Intel(R) Xeon(R) ..., 1 thread"
    d_model: int
    n_heads: int
    batch: int
    dtype: str
    Ts: tuple[int, ...]
    score_matrix_mb: tuple[float, ...]   # B·H·T²·bytes of one T×T score matrix per T, computed not measured
    rows: list[CostRow]
    slopes: list[Slope]
    memory_limit_bytes: int
    limit_note: str                      # where the limit came from, in words
    memory_method: str                   # what peak_mb measures, in words
    cancelled: bool = False

    def series(self, path: str, mode: str) -> tuple[list[int], list[float], list[float]]:
        """Measured points only: (Ts, ms, peak_mb) for one path and mode, in increasing T."""
        rows = [r for r in self.rows if r.path == path and r.mode == mode and not r.skipped]
        return [r.T for r in rows], [r.ms for r in rows], [r.peak_mb for r in rows]

    def slope(self, path: str, mode: str) -> Slope:
        for s in self.slopes:
            if s.path == path and s.mode == mode:
                return s
        raise ValueError(f"this sweep did not measure {path} {mode} (was backward=False?).")

    def row(self, T: int, path: str, mode: str) -> CostRow:
        for r in self.rows:
            if r.T == T and r.path == path and r.mode == mode:
                return r
        raise ValueError(f"this sweep has no row for T = {T}, {path} {mode}.")


def score_matrix_bytes(T: int, *, n_heads: int, batch: int = 1, dtype_bytes: int = 4) -> int:
    """Bytes of one (B, H, T, T) score matrix: one entry per pair of positions, per head."""
    return batch * n_heads * T * T * dtype_bytes


def predicted_peak_bytes(path: str, mode: str, T: int, *, d_model: int, n_heads: int, batch: int = 1,
                         dtype_bytes: int = 4) -> int:
    """The guard's upper bound on one run's peak memory (see TT_UNITS)."""
    if path not in PATHS or mode not in MODES:
        raise ValueError(f"path must be one of {PATHS} and mode one of {MODES}, got {path!r}, {mode!r}.")
    tt = TT_UNITS.get((path, mode), 0) * score_matrix_bytes(T, n_heads=n_heads, batch=batch, dtype_bytes=dtype_bytes)
    masks = (1 + dtype_bytes) * T * T if path == "materialised" else 0
    linear = LINEAR_UNITS[mode] * batch * T * d_model * dtype_bytes
    return tt + masks + linear + SLACK_BYTES


def _make_run(layer: MultiHeadAttention, x: torch.Tensor, path: str, mode: str) -> Callable[[], None]:
    """A closure running one causal attention layer once; the traced path keeps its T×T internals alive."""
    trace = path == "materialised"

    def forward() -> None:
        with torch.no_grad():
            y, record, _ = layer(x, trace=trace, is_causal=True)  # y (B, T, d_model)
            del y, record

    def forward_backward() -> None:
        y, record, _ = layer(x, trace=trace, is_causal=True)  # y (B, T, d_model)
        y.sum().backward()
        del y, record
        layer.zero_grad(set_to_none=True)  # free this run's gradients inside the run, so that the next
        x.grad = None                      # run starts from the same memory and frees nothing it did not allocate

    return forward if mode == "forward" else forward_backward


def _measure(T: int, path: str, mode: str, ctx: dict[str, Any], skip: str = "") -> CostRow:
    """One row: skipped (for `skip`, or when the guard says it would not fit), else timed and its peak measured."""
    device, d_model, n_heads, batch, dtype = (ctx[k] for k in ("device", "d_model", "n_heads", "batch", "dtype"))
    esize = torch.empty((), dtype=dtype).element_size()
    predicted = predicted_peak_bytes(path, mode, T, d_model=d_model, n_heads=n_heads, batch=batch,
                                     dtype_bytes=esize)
    base = dict(T=T, path=path, mode=mode, predicted_mb=predicted / 2**20)
    skip = skip or ("would not fit in the memory limit" if predicted > ctx["limit"] else "")
    if skip:
        return CostRow(ms=None, peak_mb=None, skipped=skip, **base)
    torch.manual_seed(0)
    layer = MultiHeadAttention(d_model, n_heads).to(device=device, dtype=dtype)
    x = torch.randn(batch, T, d_model, device=device, dtype=dtype, requires_grad=mode != "forward")  # (B, T, C)
    run = _make_run(layer, x, path, mode)
    try:
        ms = time_ms(run, device, repeats=ctx["repeats"])
        peak = peak_bytes(run, device)
    except (RuntimeError, torch.OutOfMemoryError) as err:
        if not _is_oom(err):
            raise
        return CostRow(ms=None, peak_mb=None, skipped="ran out of memory", **base)
    finally:
        del layer, x, run
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return CostRow(ms=ms, peak_mb=peak / 2**20, **base)


def _fit_slopes(rows: list[CostRow], modes: Sequence[str], fit_from: int | None) -> list[Slope]:
    """Slopes over the upper part of the range: T >= fit_from, or the upper half of the measured Ts."""
    slopes = []
    for path in PATHS:
        for mode in modes:
            done = [r for r in rows if r.path == path and r.mode == mode and not r.skipped]
            lo = fit_from if fit_from is not None else (done[(len(done) - 1) // 2].T if done else 0)
            fit = [r for r in done if r.T >= lo]
            Ts = [r.T for r in fit]
            slopes.append(Slope(path, mode, fit_slope(Ts, [r.ms for r in fit]),
                                fit_slope(Ts, [r.peak_mb for r in fit]), tuple(Ts)))
    return slopes


def _memory_limit(device: torch.device, memory_limit_bytes: int | None) -> tuple[int, str]:
    if memory_limit_bytes is not None:
        if memory_limit_bytes <= 0:
            raise ValueError(f"the memory limit must be a positive number of bytes, got {memory_limit_bytes}.")
        return int(memory_limit_bytes), f"{memory_limit_bytes / 2**20:,.0f} MB, set by the caller"
    free, source = available_memory(device)
    limit = int(free * MEMORY_FRACTION)
    return limit, f"{limit / 2**20:,.0f} MB = {MEMORY_FRACTION:.0%} of {source} ({free / 2**30:.1f} GiB)"


def _check_ts(Ts: Sequence[int]) -> tuple[int, ...]:
    Ts = tuple(sorted(set(int(t) for t in Ts)))
    if not Ts or Ts[0] < 1:
        raise ValueError("give at least one sequence length T, each a whole number of at least 1.")
    return Ts


def cost_sweep(
    Ts: Sequence[int] = DEFAULT_TS,
    *,
    d_model: int = 128,
    n_heads: int = 4,
    batch: int = 1,
    device: str | torch.device = "cpu",
    backward: bool = True,
    dtype: torch.dtype = torch.float32,
    repeats: int = 3,
    memory_limit_bytes: int | None = None,
    time_budget_s: float | None = None,
    fit_from: int | None = None,
    progress: Progress | None = None,
    stop_event: threading.Event | None = None,
) -> CostSweep:
    """Time and peak memory of one causal attention layer (B, T, d_model) against T, for the traced path that
    materialises the T×T matrix and for F.scaled_dot_product_attention; forward, and forward+backward too when
    `backward`. A T whose predicted peak exceeds the memory limit (by default half of the free memory) is skipped
    and so is every point after `time_budget_s` seconds or once `stop_event` is set (then `cancelled`)."""
    Ts = _check_ts(Ts)
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads}).")
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    limit, note = _memory_limit(dev, memory_limit_bytes)
    modes = MODES if backward else MODES[:1]
    ctx = dict(device=dev, d_model=d_model, n_heads=n_heads, batch=batch, dtype=dtype, limit=limit,
               repeats=max(1, repeats))
    jobs = [(T, path, mode) for T in Ts for mode in modes for path in PATHS]
    for path in PATHS:  # one untimed point of each path and mode at the smallest T, so that first-call costs
        for mode in modes:  # (thread pools, lazy kernel choice, the profiler's start-up) miss the first row
            _measure(Ts[0], path, mode, {**ctx, "repeats": 1})
    rows: list[CostRow] = []
    start, cancelled = time.perf_counter(), False
    for i, (T, path, mode) in enumerate(jobs):
        cancelled = cancelled or bool(stop_event and stop_event.is_set())
        late = time_budget_s is not None and time.perf_counter() - start > time_budget_s
        if progress and not (cancelled or late):
            progress(i, len(jobs), f"T = {T}: {path}, {mode}")
        rows.append(_measure(T, path, mode, ctx, "cancelled" if cancelled else "past the time budget" if late else ""))
    if progress:
        progress(len(jobs), len(jobs), "done")
    esize = torch.empty((), dtype=dtype).element_size()
    tt_mb = tuple(score_matrix_bytes(T, n_heads=n_heads, batch=batch, dtype_bytes=esize) / 2**20 for T in Ts)
    method = CUDA_MEMORY_METHOD if dev.type == "cuda" else CPU_MEMORY_METHOD
    return CostSweep(device_name(dev), d_model, n_heads, batch, str(dtype).removeprefix("torch."), Ts, tt_mb, rows,
                     _fit_slopes(rows, modes, fit_from), limit, note, method, cancelled)
