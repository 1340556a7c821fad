"""Streamlit glue for the Cost page: the measured sweep behind a button, the slope checks, the KV-cache trade. The
lines, tables, claims and sentences with numbers are lessons.cost; this module draws them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from viz_model.figures.cost import kv_cache_chart, loglog_chart
from viz_model.lessons import cost as lesson
from viz_model.ui import chart, share
from viz_model.ui.cache import SharedResults, cached, input_key, shared_results
from viz_model.ui.errors import guard, section
from viz_model.ui.widgets import show_check

ROOT = Path(__file__).resolve().parents[2]
RECURRENCE_PAGE = "app_pages/recurrence.py"
MAX_STORED = 32           # measured sweeps kept per server (one per device and setting)


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
    return input_key(lesson.device_name(where.device), s)


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
def render_sweep(sweep: lesson.CostSweep, when: float, wall_s: float, *, where: Where, key: str) -> None:
    st.caption(lesson.sweep_caption(sweep, when, wall_s))
    c1, c2 = st.columns(2)
    for col, metric, y_title, unit in ((c1, "time", "time per run, ms", "ms"),
                                       (c2, "memory", "peak memory, MB", "MB")):
        fig = cached("cost_loglog", (key, when, metric), lambda m=metric, y=y_title, u=unit: loglog_chart(
            lesson.sweep_lines(sweep, m), y_title=y, unit=u,
            title=f"{'Time' if m == 'time' else 'Peak memory'} against T"))
        chart.show(fig, key=f"{where.prefix}_{metric}", name=f"cost_{where.device}_{metric}", container=col)
    render_claim(sweep)
    st.table(pd.DataFrame(lesson.sweep_rows(sweep)).set_index("T"))  # static: wraps its headers, no scrolling
    st.caption("fwd = forward, fwd+bwd = forward+backward; ms = median wall time of one run, MB = its peak memory.")
    st.caption(f"**Memory limit:** {sweep.limit_note}. **Memory measured as:** {sweep.memory_method}.")
    skipped = lesson.skipped_text(sweep)
    if skipped:
        st.markdown(skipped)


def render_claim(sweep: lesson.CostSweep) -> None:
    """The lecture's sentence beside the measured slopes: ✓ when the materialised memory slope is near 2."""
    st.markdown(lesson.LECTURE_QUOTE)
    for item in lesson.slope_claims(sweep):
        if isinstance(item, lesson.Note):
            (st.info if item.kind == "info" else st.caption)(item.text)
        else:
            show_check(item)


# -- the GPU --------------------------------------------------------------------------------------------------
def gpu() -> None:
    name = lesson.gpu_name()
    if name is None:
        st.info(lesson.NO_GPU)
        return
    st.markdown(f"This server has a GPU: **{name}**. The same sweep on it, with longer sequences (the memory limit "
                "is half of its free memory):")
    measure(GPU)


# -- the KV cache ---------------------------------------------------------------------------------------------
@section("the KV-cache trade")  # the layers slider reruns only this part
def kv_cache(sidebar_name: str, sidebar_config) -> None:
    layers = st.slider("Layers of the lecture-sized models", 1, 96, 32, key="cost_kv_layers", **share.URL,
                       help="The cache keeps a K and a V vector per layer, head and token: twice the layers, "
                            "twice the cache.")
    groups = lesson.kv_models(sidebar_name, sidebar_config, layers)
    key = input_key(sidebar_name, repr(groups))
    chart.show(cached("cost_kv", (key,), lambda: kv_cache_chart(lesson.kv_lines(groups),
                                                               title="KV cache against T, computed")),
               key="cost_kv_chart", name="kv_cache")
    st.table(pd.DataFrame(lesson.kv_rows(groups)).set_index("model"))
    st.caption(f"KV cache of one sequence at each T; the last column is one layer's (1, H, T, T) score matrix at "
               f"T = {lesson.TABLE_TS[-1]:,}, for comparison. Models of the same shape share a row.")
    st.markdown(lesson.kv_text(layers))


# -- the RNN comparison ---------------------------------------------------------------------------------------
def recurrence_link() -> None:
    st.markdown(lesson.RNN_WORK)
    if not (ROOT / RECURRENCE_PAGE).exists():
        st.caption("The RNN-vs-Transformer page that measures this comparison is not part of this app yet.")
        return
    try:
        st.page_link(RECURRENCE_PAGE, label="RNN vs Transformer: the two costs measured", icon=":material/link:")
    except StreamlitAPIException:  # the file exists but the page is not registered in app.py yet
        st.caption("The RNN-vs-Transformer page is being built; it is not in the navigation yet.")
