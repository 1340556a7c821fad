"""What attention costs: time and peak memory of one layer against T, the T×T score matrix, and the KV cache."""

from __future__ import annotations

import concurrent.futures
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from viz_model.attention import MultiHeadAttention
from viz_model.device import resolve_device
from viz_model.lessons.common import Fact, fit_slope, measured_ago

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

CPU_MEMORY_METHOD = (
    "peak of live bytes that torch's CPU allocator handed out during one run, from torch.profiler "
    "(profile_memory=True) allocation and free events summed in time order; the input and the layer's weights, "
    "allocated before the run, are not counted, nor is BLAS/oneDNN scratch memory outside torch's allocator"
)
CUDA_MEMORY_METHOD = (
    "torch.cuda.max_memory_allocated() during one run minus torch.cuda.memory_allocated() before it "
    "(peak statistics reset first); the caching allocator's reserved but unused memory is not counted"
)

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


# -- sizes, computed --------------------------------------------------------------------------------------------
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


def available_memory(device: torch.device) -> tuple[int, str]:
    """(free bytes, where the number came from): CUDA's free memory, else MemAvailable from /proc/meminfo."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free), "free GPU memory (torch.cuda.mem_get_info)"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except OSError:
        pass
    return 4 * 2**30, "a fixed 4 GiB (this system has no /proc/meminfo)"


def device_name(device: str | torch.device) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    model = "CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    n = torch.get_num_threads()
    return f"{model}, {n} thread{'s' if n > 1 else ''}"


# -- one measurement ------------------------------------------------------------------------------------------
def _make_run(layer: MultiHeadAttention, x: torch.Tensor, path: str, mode: str) -> Callable[[], None]:
    """A closure running one causal attention layer once; the traced path keeps its T×T internals alive."""
    trace = path == "materialised"

    def forward() -> None:
        with torch.no_grad():
            y, record, _ = layer(x, None, trace=trace, is_causal=True)  # y (B, T, d_model)
            del y, record

    def forward_backward() -> None:
        y, record, _ = layer(x, None, trace=trace, is_causal=True)  # y (B, T, d_model)
        y.sum().backward()
        del y, record
        layer.zero_grad(set_to_none=True)  # free this run's gradients inside the run, so that the next
        x.grad = None                      # run starts from the same memory and frees nothing it did not allocate

    return forward if mode == "forward" else forward_backward


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_ms(run: Callable[[], None], device: torch.device, repeats: int = 3, warmup: int = 1) -> float:
    """Median wall time in ms of `repeats` runs after `warmup` runs (synchronised on CUDA)."""
    for _ in range(warmup):
        run()
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        _sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# Every profile runs on this one thread. Each Streamlit session runs its script on a thread of its own, and two
# torch.profiler sessions overlapping on two threads crash the process (SIGSEGV, 3 of 3 runs; #26). Kineto also logs
# "External init callback must run in same thread as registerClient" once per process, for the first profile off
# the main thread where torch registered it: harmless, and no Streamlit script runs on the main thread.
_PROFILER_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="cost-profiler")


def cpu_peak_bytes(run: Callable[[], None]) -> int:
    """Peak live bytes allocated by torch on the CPU during run() (see CPU_MEMORY_METHOD)."""
    return _PROFILER_THREAD.submit(_profiled_peak, run).result()


def _profiled_peak(run: Callable[[], None]) -> int:
    from torch.profiler import ProfilerActivity, profile

    os.environ.setdefault("KINETO_LOG_LEVEL", "99")  # kineto otherwise prints two log lines per profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = [(e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for _t, nbytes in sorted(events):
        live += nbytes
        peak = max(peak, live)
    return peak


def peak_bytes(run: Callable[[], None], device: torch.device) -> int:
    """Peak memory of one run above what was allocated before it."""
    if device.type != "cuda":
        return cpu_peak_bytes(run)
    _sync(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    run()
    _sync(device)
    return max(0, torch.cuda.max_memory_allocated(device) - before)


def _is_oom(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate" in text


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


# -- the sweep ------------------------------------------------------------------------------------------------
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


# -- the KV cache ----------------------------------------------------------------------------------------------
def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_k: int, T: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """Bytes of a KV cache: a K and a V vector of d_k numbers per layer, KV head, position and sequence."""
    return 2 * n_layers * n_kv_heads * d_k * T * batch * dtype_bytes


@dataclass(frozen=True)
class KVModel:
    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    dtype_bytes: int       # 4 for our float32 models, 2 for fp16/bf16 serving
    note: str = ""


@dataclass(frozen=True)
class KVRow:
    model: str
    T: int
    n_layers: int
    n_kv_heads: int
    d_k: int
    dtype_bytes: int
    bytes: int             # kv_cache_bytes(...)
    per_token_bytes: int   # the same for T = 1
    score_matrix_bytes: int  # one layer's (1, H, T, T) score matrix at this T, for comparison


# Lecture-sized models, the usual published shapes (Llama-2-7B: 32 layers x 32 heads of 128; Llama-3-8B keeps
# 8 K/V heads for its 32 query heads: grouped-query attention).
LECTURE_MODELS = (
    KVModel("lecture-sized (32 layers, 32 heads, d_k 128, fp16)", 32, 32, 32, 128, 2, "Llama-2-7B-shaped"),
    KVModel("same with 8 K/V heads (GQA, fp16)", 32, 32, 8, 128, 2, "Llama-3-8B-shaped"),
)


def kv_model_from_config(name: str, config: Any, dtype_bytes: int = 4) -> KVModel:
    """A KVModel from a ModelConfig or its dict (n_kv_heads defaults to n_heads)."""
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    n_heads, d_model = int(get("n_heads")), int(get("d_model"))
    n_kv = get("n_kv_heads") or n_heads
    return KVModel(name, int(get("n_layers")), n_heads, int(n_kv), d_model // n_heads, dtype_bytes,
                   f"d_model {d_model}, built for T <= {get('max_len', '?')}")


def shipped_kv_models(models_dir: str | Path | None = None) -> list[KVModel]:
    """The shipped checkpoints' shapes, read from their JSON configs (no weights loaded)."""
    from viz_model import ASSETS_DIR
    from viz_model.checkpoint import read_metadata

    folder = Path(models_dir) if models_dir is not None else ASSETS_DIR / "models"
    models = []
    for path in sorted(folder.glob("*.json")):
        try:
            config = read_metadata(path.with_suffix(".safetensors"))["config"]
            models.append(kv_model_from_config(path.stem, config, dtype_bytes=4))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a checkpoint's JSON
    return models


def kv_cache_table(Ts: Sequence[int] = (64, 1024, 4096, 32768), models: Sequence[KVModel] | None = None,
                   batch: int = 1) -> list[KVRow]:
    """The cache's size for every model and T: linear in T and in layers, against one layer's T×T scores."""
    models = list(models) if models is not None else [*shipped_kv_models(), *LECTURE_MODELS]
    rows = []
    for m in models:
        for T in _check_ts(Ts):
            rows.append(KVRow(
                m.name, T, m.n_layers, m.n_kv_heads, m.d_k, m.dtype_bytes,
                kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_k, T, batch, m.dtype_bytes),
                kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_k, 1, 1, m.dtype_bytes),
                score_matrix_bytes(T, n_heads=m.n_heads, batch=batch, dtype_bytes=m.dtype_bytes),
            ))
    return rows


# -- what the page shows of a sweep ---------------------------------------------------------------------------
SLOPE_OK = (1.8, 2.2)     # the band for "memory grows with T²"
SHORT = {"materialised": "T×T (traced)", "sdpa": "SDPA"}
ABBREV = {"materialised": "T×T", "sdpa": "SDPA", "forward": "fwd", "forward+backward": "fwd+bwd"}


@dataclass(frozen=True)
class Note:
    """A sentence the page shows between the claims, as an "info" box or a "caption": a measurement that cannot
    decide the claim (too few or too short lengths), or the numbers beside it."""

    kind: str
    text: str


def _modes(sweep: CostSweep) -> list[str]:
    return [m for m in MODES if any(r.mode == m for r in sweep.rows)]


def _num(v: float) -> str:
    """Three significant digits, without exponents: 0.00391, 1.53, 436, 1,234."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def sweep_lines(sweep: CostSweep, metric: str) -> list[dict]:
    """The log–log chart's lines for "time" or "memory": each path and mode with its fitted slope, and for memory
    the computed size of one T×T score matrix."""
    lines = []
    for mode in _modes(sweep):
        for path in PATHS:
            Ts, ms, mb = sweep.series(path, mode)
            slope = sweep.slope(path, mode)
            lines.append(dict(name=f"{SHORT[path]}, {mode}", T=Ts, y=ms if metric == "time" else mb, kind=path,
                              mode=mode, slope=slope.time if metric == "time" else slope.memory))
    if metric == "memory":
        mb = list(sweep.score_matrix_mb)
        lines.append(dict(name="one T×T score matrix (computed, not measured)", T=list(sweep.Ts), y=mb,
                          kind="computed", mode="computed", slope=fit_slope(sweep.Ts, mb)))
    return lines


def sweep_caption(sweep: CostSweep, when: float, wall_s: float) -> str:
    ago = measured_ago(when)
    return (f"Measured on **{sweep.device}** {ago} (took {wall_s:.0f} s): one causal "
            f"attention layer, d_model {sweep.d_model}, {sweep.n_heads} heads, batch {sweep.batch}, "
            f"{sweep.dtype}. Median of 3 timed runs after a warm-up.")


def sweep_rows(sweep: CostSweep) -> list[dict]:
    """One row per T: the T×T matrix's computed size, then ms and MB measured for each path and mode."""
    rows = []
    for T, tt in zip(sweep.Ts, sweep.score_matrix_mb):
        row = {"T": f"{T:,}", "T×T MB (computed)": _num(tt)}
        for mode in _modes(sweep):
            for path in PATHS:
                r = sweep.row(T, path, mode)
                name = f"{ABBREV[path]} {ABBREV[mode]}"
                row[f"{name} ms"] = "skipped" if r.skipped else _num(r.ms)
                row[f"{name} MB"] = "skipped" if r.skipped else _num(r.peak_mb)
        rows.append(row)
    return rows


def skipped_text(sweep: CostSweep) -> str | None:
    skipped = sorted({(r.T, r.path, r.mode, r.skipped) for r in sweep.rows if r.skipped})
    if not skipped:
        return None
    return "**Skipped points**\n" + "\n".join(f"- T = {T:,}, {SHORT[p]}, {m}: {why}" for T, p, m, why in skipped)


def _memory_claim(sweep: CostSweep, mode: str) -> Fact | Note:
    """The traced path's memory slope in this mode against the quadratic: a Fact, or a Note when the lengths
    cannot decide it."""
    lo, hi = SLOPE_OK
    m = sweep.slope("materialised", mode)
    if m.memory is None:
        return Note("info", f"{mode}: fewer than two lengths were measured, so there is no slope to fit. Widen the "
                            "T range.")
    over = f"T = {', '.join(f'{t:,}' for t in m.fit_Ts)}"
    if lo <= m.memory <= hi:
        return Fact(True, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over} "
                          "(2 = quadratic).")
    if max(m.fit_Ts) < 512:
        return Note("info", f"T×T (traced) path, {mode}: memory slope {m.memory:.2f} over {over} — at such short T "
                            "the fixed buffers and the (T, d_model) tensors still weigh as much as the T×T matrix. "
                            "Extend the range to T ≥ 512 to see the quadratic.")
    return Fact(False, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over}, "
                       f"outside [{lo}, {hi}]: not the quadratic the lecture predicts on this run.")


def slope_claims(sweep: CostSweep) -> list[Fact | Note]:
    """The lecture's "memory grows with T²" against the measured slopes, mode by mode, with SDPA's slope and the
    time slopes as notes beside it."""
    out: list[Fact | Note] = []
    for mode in _modes(sweep):
        out.append(_memory_claim(sweep, mode))
        sd = sweep.slope("sdpa", mode)
        if sweep.slope("materialised", mode).memory is not None and sd.memory is not None:
            out.append(Note("caption", f"SDPA, {mode}: memory slope {sd.memory:.2f} (1 = linear) — it never stores "
                                       "the T×T matrix."))
    fwd_t, sdpa_t = sweep.slope("materialised", "forward").time, sweep.slope("sdpa", "forward").time
    on_cpu = sweep.memory_method == CPU_MEMORY_METHOD
    if fwd_t is not None and sdpa_t is not None:
        out.append(Note("caption", f"Time slopes (forward): T×T {fwd_t:.2f}, SDPA {sdpa_t:.2f}. Time is noisier than "
                        f"memory, and on a {'CPU' if on_cpu else 'GPU'} it shows a lower slope at small T because "
                        "fixed overheads (Python, kernel calls, thread start-up) weigh as much as the T² work there. "
                        "Both paths still do T² multiply-adds: SDPA saves memory, not the quadratic work."
                        + (" Above 2, as here, usually means the T×T matrices have outgrown the CPU's caches, so "
                           "each entry also costs a trip to main memory." if on_cpu and fwd_t > SLOPE_OK[1] else "")))
    return out


def gpu_name() -> str | None:
    """The server's GPU, or None without one."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


# -- what the page shows of the KV cache ----------------------------------------------------------------------
KV_TS = tuple(2**i for i in range(6, 16))   # 64 … 32,768 tokens in the cache
TABLE_TS = (64, 1024, 4096, 32768)


def _merged_label(names: list[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return f"{names[0]} and {len(names) - 1} more of the same shape"


def _lecture_name(m: KVModel) -> str:
    """The lecture model's name without its layer count (the slider changes it; the legend shows it)."""
    gqa = f", {m.n_kv_heads} K/V heads (GQA)" if m.n_kv_heads < m.n_heads else ""
    return f"lecture-sized: {m.n_heads} heads of d_k {m.d_k}{gqa}, {8 * m.dtype_bytes}-bit"


def kv_models(sidebar_name: str, sidebar_config: Any, lecture_layers: int) -> list[tuple[list[str], KVModel]]:
    """Shipped models, the sidebar's model and the lecture-sized ones, models of identical shape merged."""
    shipped = shipped_kv_models()
    if sidebar_name in {m.name for m in shipped}:
        shipped = [replace(m, name=f"{m.name} (sidebar)") if m.name == sidebar_name else m for m in shipped]
    else:
        shipped.append(kv_model_from_config(f"{sidebar_name} (sidebar)", sidebar_config, dtype_bytes=4))
    lecture = [replace(m, n_layers=lecture_layers, name=_lecture_name(m)) for m in LECTURE_MODELS]
    merged: dict[tuple, tuple[list[str], KVModel]] = {}
    for m in [*shipped, *lecture]:
        shape = (m.n_layers, m.n_heads, m.n_kv_heads, m.d_k, m.dtype_bytes)
        if shape in merged:
            merged[shape][0].append(m.name)
        else:
            merged[shape] = ([m.name], m)
    return list(merged.values())


def size_text(n: float) -> str:
    """Bytes in the largest binary unit they fill: 1.53 GiB, 436 KiB, 12 B."""
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{_num(n / div)} {unit}"
    return f"{n:,.0f} B"


def kv_lines(groups: list[tuple[list[str], KVModel]]) -> list[dict]:
    """The KV-cache chart's lines: each shape's cache in MiB at every T of KV_TS."""
    lines = []
    for names, m in groups:
        rows = kv_cache_table(KV_TS, [m])
        lines.append(dict(name=_merged_label(names), T=[r.T for r in rows], mib=[r.bytes / 2**20 for r in rows],
                          layers=m.n_layers, note=f"{m.n_kv_heads} K/V heads × d_k {m.d_k}, {m.dtype_bytes} bytes "
                                                  f"per number; {m.note}"))
    return lines


def kv_rows(groups: list[tuple[list[str], KVModel]]) -> list[dict]:
    """The KV-cache table: one row per shape, its cache at each T of TABLE_TS and one layer's T×T at the last."""
    rows = []
    for names, m in groups:
        kv = kv_cache_table(TABLE_TS, [m])
        row = {"model": "; ".join(names), "layers": m.n_layers, "K/V heads × d_k": f"{m.n_kv_heads} × {m.d_k}",
               "bytes/number": m.dtype_bytes, "per token": size_text(kv[0].per_token_bytes)}
        row.update({f"T = {r.T:,}": size_text(r.bytes) for r in kv})
        row[f"1 layer's T×T at {TABLE_TS[-1]:,}"] = size_text(kv[-1].score_matrix_bytes)
        rows.append(row)
    return rows


def kv_text(layers: int) -> str:
    """The lecture-sized cache at the longest T, with and without GQA, against one layer's T×T score matrix."""
    big = kv_cache_table((TABLE_TS[-1],), [replace(LECTURE_MODELS[0], n_layers=layers)])[0]
    gqa = kv_cache_table((TABLE_TS[-1],), [replace(LECTURE_MODELS[1], n_layers=layers)])[0]
    return (f"At T = {big.T:,} the lecture-sized model's cache holds **{size_text(big.bytes)}** "
            f"({size_text(big.bytes / layers)} per layer); with {gqa.n_kv_heads} K/V heads (GQA) "
            f"{size_text(gqa.bytes)}. The cache is linear in T and in layers; without it, each new token would "
            "recompute every earlier K and V. For comparison, one layer's full T×T score matrix at this T "
            f"would be {size_text(big.score_matrix_bytes)}, which SDPA never stores.")


# -- what the page says ---------------------------------------------------------------------------------------
LECTURE_QUOTE = "> *The score matrix has one entry per pair of positions, so memory grows with T².* — the lecture"
NO_GPU = ("**No GPU on this server:** `torch.cuda.is_available()` is False, so only the CPU is measured. On a "
          "GPU the same sweep would reach much longer T before memory runs out. Its memory slopes would be the "
          "same — about 2 for the T×T path, about 1 for SDPA, whose fused (FlashAttention-style) kernels never "
          "write the T×T matrix to GPU memory — because memory counts entries, not speed. Its time curve would "
          "start flat (at small T a GPU mostly waits on kernel launches) and bend up to the quadratic once the "
          "T² work fills the chip.")
RNN_WORK = ("An RNN does **O(n·d²)** work for a sequence (one d×d matrix per step, n steps one after another); "
            "attention does **O(n²·d)** (every pair of positions, all at once). Attention wins while n < d, "
            "and it runs in parallel; past that the n² term is the trade that was made.")
