"""Streamlit glue for the Cost page: the measured sweep behind a button, the slope checks, the KV-cache trade."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import streamlit as st
import torch
from streamlit.errors import StreamlitAPIException

from viz_model.figures.cost import kv_cache_chart, loglog_chart
from viz_model.lessons import cost as lesson
from viz_model.ui import chart, share
from viz_model.ui.cache import SharedResults, cached, input_key, shared_results
from viz_model.ui.errors import guard, section
from viz_model.ui.widgets import check_line

ROOT = Path(__file__).resolve().parents[2]
RECURRENCE_PAGE = "app_pages/recurrence.py"
SLOPE_OK = (1.8, 2.2)     # the band for "memory grows with T²"
MAX_STORED = 32           # measured sweeps kept per server (one per device and setting)
SHORT = {"materialised": "T×T (traced)", "sdpa": "SDPA"}
ABBREV = {"materialised": "T×T", "sdpa": "SDPA", "forward": "fwd", "forward+backward": "fwd+bwd"}
KV_TS = tuple(2**i for i in range(6, 16))   # 64 … 32,768 tokens in the cache
TABLE_TS = (64, 1024, 4096, 32768)


@dataclass(frozen=True)
class Where:
    """Where a sweep runs and what its widgets offer there."""

    device: str            # "cpu" | "cuda"
    prefix: str            # widget keys and URL names
    Ts: tuple[int, ...]    # the lengths a student may pick from
    default: tuple[int, int]
    budget_s: int          # default time budget


CPU = Where("cpu", "cost_cpu", tuple(2**i for i in range(4, 13)), (64, 2048), 30)        # 16 … 4,096
GPU = Where("cuda", "cost_gpu", tuple(2**i for i in range(6, 16)), (256, 16384), 60)     # 64 … 32,768


@dataclass(frozen=True)
class Settings:
    lo: int
    hi: int
    n_heads: int
    d_model: int
    backward: bool
    budget_s: int

    @property
    def Ts(self) -> tuple[int, ...]:
        return tuple(2**i for i in range(0, 20) if self.lo <= 2**i <= self.hi)


# -- settings -------------------------------------------------------------------------------------------------
def settings(where: Where) -> Settings:
    """The sweep's widgets (bound to the URL: a link reproduces the measurement's setting)."""
    p = where.prefix
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1.3])
    lo, hi = c1.select_slider("Sequence lengths T (powers of two)", where.Ts, value=where.default, key=f"{p}_T",
                              **share.URL,
                              format_func=lambda t: f"{t:,}",
                              help="Each doubling of T quadruples the T×T matrix. Longer T takes much longer.")
    heads = c2.selectbox("Heads", (1, 4, 8), index=1, key=f"{p}_heads", **share.URL,
                         help="d_model 128 split into this many heads: H score matrices of T×T each.")
    budget = c3.number_input("Time budget, s", 1, 600, where.budget_s, step=5, key=f"{p}_budget", **share.URL,
                             help="Points still to measure after this many seconds are skipped, so the server "
                                  "is never tied up for long.")
    backward = c4.checkbox("backward pass too", True, key=f"{p}_backward", **share.URL,
                           help="Training also stores what the backward pass needs.")
    return Settings(int(lo), int(hi), int(heads), 128, bool(backward), int(budget))


# -- measuring ------------------------------------------------------------------------------------------------
def _store(device: str) -> SharedResults:
    """Measured sweeps shared by every user of this server, {key: (sweep, unix time, wall seconds)}, and one sweep
    at a time per device."""
    return shared_results(f"cost_{device}", MAX_STORED)


def sweep_key(where: Where, s: Settings) -> str:
    return input_key(lesson.device_name(torch.device(where.device)), s)


def _run(where: Where, s: Settings, key: str) -> bool:
    """The sweep with a progress bar. A click elsewhere (Stop, a setting) interrupts it at its next progress
    update: Streamlit stops the script there, nothing is stored and the next run says so."""
    store = _store(where.device)
    with store.turn("Another measurement is running on this server right now (one at a time keeps the server "
                    "responsive). Try again in a moment; a result with the same settings is shared with "
                    "everyone.") as mine:
        if not mine:
            return False
        _sweep(where, s, key, store)
        return True


def _sweep(where: Where, s: Settings, key: str, store: SharedResults) -> None:
    try:
        st.session_state[f"{where.prefix}_running"] = key
        stop = st.empty()  # shown only while the sweep runs
        stop.button("Stop", key=f"{where.prefix}_stop", icon=":material/stop:",
                    help="Stops the measurement; nothing is stored.")
        bar, start = st.progress(0.0, text="Warming up (one untimed run of each path)…"), time.perf_counter()

        def progress(i: int, n: int, label: str) -> None:
            bar.progress(i / max(n, 1), text=f"{label} — {i}/{n} points, {time.perf_counter() - start:.0f} s")

        sweep = lesson.cost_sweep(s.Ts, d_model=s.d_model, n_heads=s.n_heads, device=where.device,
                                  backward=s.backward, time_budget_s=s.budget_s, progress=progress)
        store.put(key, (sweep, time.time(), time.perf_counter() - start))
        bar.empty()
        stop.empty()
        st.session_state.pop(f"{where.prefix}_running", None)
    except Exception:  # an error is shown by the guard; only an interruption (Stop) leaves the flag for next run
        st.session_state.pop(f"{where.prefix}_running", None)
        raise


def measure(where: Where) -> None:
    """Settings, the Measure button and, once measured (by anyone, for these settings), the results."""
    with guard("the measurement"):  # not a fragment: a click on Stop must interrupt the running script
        s = settings(where)
        key = sweep_key(where, s)
        if st.session_state.pop(f"{where.prefix}_running", None):
            st.warning("The measurement stopped before it finished (Stop, or a setting changed while it ran), so "
                       "nothing was stored. A shorter T range or time budget finishes sooner.")
        found = _store(where.device).get(key)
        label = "Measure again" if found else f"Measure on this server's {where.device.upper()}"
        if st.button(label, key=f"{where.prefix}_go", type="primary", icon=":material/speed:"):
            if _run(where, s, key):
                st.rerun()  # draw the stored result with the button now saying "Measure again"
        if found is None:
            st.caption(f"{len(s.Ts)} lengths × {4 if s.backward else 2} measurements each (2 paths × "
                       f"{'2 modes' if s.backward else 'forward'}), at most ~{s.budget_s} s. Nothing is measured "
                       "until you click.")
            return
        render_sweep(*found, where=where, key=key)


# -- results --------------------------------------------------------------------------------------------------
def _lines(sweep: lesson.CostSweep, metric: str) -> list[dict]:
    modes = [m for m in lesson.MODES if any(r.mode == m for r in sweep.rows)]
    lines = []
    for mode in modes:
        for path in lesson.PATHS:
            Ts, ms, mb = sweep.series(path, mode)
            slope = sweep.slope(path, mode)
            lines.append(dict(name=f"{SHORT[path]}, {mode}", T=Ts, y=ms if metric == "time" else mb, kind=path,
                              mode=mode, slope=slope.time if metric == "time" else slope.memory))
    if metric == "memory":
        mb = list(sweep.score_matrix_mb)
        lines.append(dict(name="one T×T score matrix (computed, not measured)", T=list(sweep.Ts), y=mb,
                          kind="computed", mode="computed", slope=lesson.fit_slope(sweep.Ts, mb)))
    return lines


def render_sweep(sweep: lesson.CostSweep, when: float, wall_s: float, *, where: Where, key: str) -> None:
    age = max(0, int(time.time() - when))
    ago = f"{age} s ago" if age < 120 else f"{age // 60} min ago"
    st.caption(f"Measured on **{sweep.device}** {ago} (took {wall_s:.0f} s): one causal "
               f"attention layer, d_model {sweep.d_model}, {sweep.n_heads} heads, batch {sweep.batch}, "
               f"{sweep.dtype}. Median of 3 timed runs after a warm-up.")
    c1, c2 = st.columns(2)
    for col, metric, y_title, unit in ((c1, "time", "time per run, ms", "ms"),
                                       (c2, "memory", "peak memory, MB", "MB")):
        fig = cached("cost_loglog", (key, when, metric), lambda m=metric, y=y_title, u=unit: loglog_chart(
            _lines(sweep, m), y_title=y, unit=u, title=f"{'Time' if m == 'time' else 'Peak memory'} against T"))
        chart.show(fig, key=f"{where.prefix}_{metric}", name=f"cost_{where.device}_{metric}", container=col)
    render_claim(sweep)
    st.table(sweep_table(sweep).set_index("T"))  # a static table: wraps its headers instead of scrolling
    st.caption("fwd = forward, fwd+bwd = forward+backward; ms = median wall time of one run, MB = its peak memory.")
    st.caption(f"**Memory limit:** {sweep.limit_note}. **Memory measured as:** {sweep.memory_method}.")
    skipped = sorted({(r.T, r.path, r.mode, r.skipped) for r in sweep.rows if r.skipped})
    if skipped:
        st.markdown("**Skipped points**\n" + "\n".join(f"- T = {T:,}, {SHORT[p]}, {m}: {why}"
                                                       for T, p, m, why in skipped))


def _num(v: float) -> str:
    """Three significant digits, without exponents: 0.00391, 1.53, 436, 1,234."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def sweep_table(sweep: lesson.CostSweep) -> pd.DataFrame:
    """One row per T: the T×T matrix's computed size, then ms and MB measured for each path and mode."""
    modes = [m for m in lesson.MODES if any(r.mode == m for r in sweep.rows)]
    rows = []
    for T, tt in zip(sweep.Ts, sweep.score_matrix_mb):
        row = {"T": f"{T:,}", "T×T MB (computed)": _num(tt)}
        for mode in modes:
            for path in lesson.PATHS:
                r = sweep.row(T, path, mode)
                name = f"{ABBREV[path]} {ABBREV[mode]}"
                row[f"{name} ms"] = "skipped" if r.skipped else _num(r.ms)
                row[f"{name} MB"] = "skipped" if r.skipped else _num(r.peak_mb)
        rows.append(row)
    return pd.DataFrame(rows)


def render_claim(sweep: lesson.CostSweep) -> None:
    """The lecture's sentence beside the measured slopes: ✓ when the materialised memory slope is near 2."""
    st.markdown("> *The score matrix has one entry per pair of positions, so memory grows with T².* — the lecture")
    lo, hi = SLOPE_OK
    for mode in [m for m in lesson.MODES if any(r.mode == m for r in sweep.rows)]:
        m = sweep.slope("materialised", mode)
        if m.memory is None:
            st.info(f"{mode}: fewer than two lengths were measured, so there is no slope to fit. Widen the T range.")
            continue
        over = f"T = {', '.join(f'{t:,}' for t in m.fit_Ts)}"
        if lo <= m.memory <= hi:
            check_line(True, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over} "
                             "(2 = quadratic).")
        elif max(m.fit_Ts) < 512:
            st.info(f"T×T (traced) path, {mode}: memory slope {m.memory:.2f} over {over} — at such short T the "
                    "fixed buffers and the (T, d_model) tensors still weigh as much as the T×T matrix. Extend the "
                    "range to T ≥ 512 to see the quadratic.")
        else:
            check_line(False, f"T×T (traced) path, {mode}: measured memory slope **{m.memory:.2f}** over {over}, "
                              f"outside [{lo}, {hi}]: not the quadratic the lecture predicts on this run.")
        sd = sweep.slope("sdpa", mode)
        if sd.memory is not None:
            st.caption(f"SDPA, {mode}: memory slope {sd.memory:.2f} (1 = linear) — it never stores the T×T matrix.")
    fwd_t, sdpa_t = sweep.slope("materialised", "forward").time, sweep.slope("sdpa", "forward").time
    on_cpu = sweep.memory_method == lesson.CPU_MEMORY_METHOD
    if fwd_t is not None and sdpa_t is not None:
        st.caption(f"Time slopes (forward): T×T {fwd_t:.2f}, SDPA {sdpa_t:.2f}. Time is noisier than memory, and "
                   f"on a {'CPU' if on_cpu else 'GPU'} it shows a lower slope at small T because fixed overheads "
                   "(Python, kernel calls, thread start-up) weigh as much as the T² work there. Both paths still "
                   "do T² multiply-adds: SDPA saves memory, not the quadratic work."
                   + (" Above 2, as here, usually means the T×T matrices have outgrown the CPU's caches, so each "
                      "entry also costs a trip to main memory." if on_cpu and fwd_t > SLOPE_OK[1] else ""))


# -- the GPU --------------------------------------------------------------------------------------------------
def gpu() -> None:
    if torch.cuda.is_available():
        st.markdown(f"This server has a GPU: **{torch.cuda.get_device_name(0)}**. The same sweep on it, with "
                    "longer sequences (the memory limit is half of its free memory):")
        measure(GPU)
        return
    st.info("**No GPU on this server:** `torch.cuda.is_available()` is False, so only the CPU is measured. On a "
            "GPU the same sweep would reach much longer T before memory runs out. Its memory slopes would be the "
            "same — about 2 for the T×T path, about 1 for SDPA, whose fused (FlashAttention-style) kernels never "
            "write the T×T matrix to GPU memory — because memory counts entries, not speed. Its time curve would "
            "start flat (at small T a GPU mostly waits on kernel launches) and bend up to the quadratic once the "
            "T² work fills the chip.")


# -- the KV cache ---------------------------------------------------------------------------------------------
def _merged_label(names: list[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return f"{names[0]} and {len(names) - 1} more of the same shape"


def _lecture_name(m: lesson.KVModel) -> str:
    """The lecture model's name without its layer count (the slider changes it; the legend shows it)."""
    gqa = f", {m.n_kv_heads} K/V heads (GQA)" if m.n_kv_heads < m.n_heads else ""
    return f"lecture-sized: {m.n_heads} heads of d_k {m.d_k}{gqa}, {8 * m.dtype_bytes}-bit"


def kv_models(sidebar_name: str, sidebar_config, lecture_layers: int) -> list[tuple[list[str], lesson.KVModel]]:
    """Shipped models, the sidebar's model and the lecture-sized ones, models of identical shape merged."""
    shipped = lesson.shipped_kv_models()
    if sidebar_name in {m.name for m in shipped}:
        shipped = [replace(m, name=f"{m.name} (sidebar)") if m.name == sidebar_name else m for m in shipped]
    else:
        shipped.append(lesson.kv_model_from_config(f"{sidebar_name} (sidebar)", sidebar_config, dtype_bytes=4))
    lecture = [replace(m, n_layers=lecture_layers, name=_lecture_name(m)) for m in lesson.LECTURE_MODELS]
    merged: dict[tuple, tuple[list[str], lesson.KVModel]] = {}
    for m in [*shipped, *lecture]:
        shape = (m.n_layers, m.n_heads, m.n_kv_heads, m.d_k, m.dtype_bytes)
        if shape in merged:
            merged[shape][0].append(m.name)
        else:
            merged[shape] = ([m.name], m)
    return list(merged.values())


def _size(n: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{_num(n / div)} {unit}"
    return f"{n:,.0f} B"


def kv_table(groups: list[tuple[list[str], lesson.KVModel]]) -> pd.DataFrame:
    rows = []
    for names, m in groups:
        kv = lesson.kv_cache_table(TABLE_TS, [m])
        row = {"model": "; ".join(names), "layers": m.n_layers, "K/V heads × d_k": f"{m.n_kv_heads} × {m.d_k}",
               "bytes/number": m.dtype_bytes, "per token": _size(kv[0].per_token_bytes)}
        row.update({f"T = {r.T:,}": _size(r.bytes) for r in kv})
        row[f"1 layer's T×T at {TABLE_TS[-1]:,}"] = _size(kv[-1].score_matrix_bytes)
        rows.append(row)
    return pd.DataFrame(rows)


@section("the KV-cache trade")  # the layers slider reruns only this part
def kv_cache(sidebar_name: str, sidebar_config) -> None:
    layers = st.slider("Layers of the lecture-sized models", 1, 96, 32, key="cost_kv_layers", **share.URL,
                       help="The cache keeps a K and a V vector per layer, head and token: twice the layers, "
                            "twice the cache.")
    groups = kv_models(sidebar_name, sidebar_config, layers)
    lines = []
    for names, m in groups:
        rows = lesson.kv_cache_table(KV_TS, [m])
        lines.append(dict(name=_merged_label(names), T=[r.T for r in rows], mib=[r.bytes / 2**20 for r in rows],
                          layers=m.n_layers, note=f"{m.n_kv_heads} K/V heads × d_k {m.d_k}, {m.dtype_bytes} bytes "
                                                  f"per number; {m.note}"))
    key = input_key(sidebar_name, repr(groups))
    chart.show(cached("cost_kv", (key,), lambda: kv_cache_chart(lines, title="KV cache against T, computed")),
               key="cost_kv_chart", name="kv_cache")
    st.table(kv_table(groups).set_index("model"))
    st.caption(f"KV cache of one sequence at each T; the last column is one layer's (1, H, T, T) score matrix at "
               f"T = {TABLE_TS[-1]:,}, for comparison. Models of the same shape share a row.")
    big = lesson.kv_cache_table((TABLE_TS[-1],), [replace(lesson.LECTURE_MODELS[0], n_layers=layers)])[0]
    gqa = lesson.kv_cache_table((TABLE_TS[-1],), [replace(lesson.LECTURE_MODELS[1], n_layers=layers)])[0]
    st.markdown(f"At T = {big.T:,} the lecture-sized model's cache holds **{_size(big.bytes)}** "
                f"({_size(big.bytes / layers)} per layer); with {gqa.n_kv_heads} K/V heads (GQA) "
                f"{_size(gqa.bytes)}. The cache is linear in T and in layers; without it, each new token would "
                "recompute every earlier K and V. For comparison, one layer's full T×T score matrix at this T "
                f"would be {_size(big.score_matrix_bytes)}, which SDPA never stores.")


# -- the RNN comparison ---------------------------------------------------------------------------------------
def recurrence_link() -> None:
    st.markdown("An RNN does **O(n·d²)** work for a sequence (one d×d matrix per step, n steps one after another); "
                "attention does **O(n²·d)** (every pair of positions, all at once). Attention wins while n < d, "
                "and it runs in parallel; past that the n² term is the trade that was made.")
    if not (ROOT / RECURRENCE_PAGE).exists():
        st.caption("The RNN-vs-Transformer page that measures this comparison is not part of this app yet.")
        return
    try:
        st.page_link(RECURRENCE_PAGE, label="RNN vs Transformer: the two costs measured", icon=":material/link:")
    except StreamlitAPIException:  # the file exists but the page is not registered in app.py yet
        st.caption("The RNN-vs-Transformer page is being built; it is not in the navigation yet.")
