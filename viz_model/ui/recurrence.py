"""Streamlit sections of the RNN vs Transformer page: graph depth and timing against T, gradients by distance with
the W_hh slider and the linear-regime RNN, and recall accuracy by distance. The measuring, the tables, the claims
and the sentences with numbers are lessons.recurrence; this module draws them."""

from __future__ import annotations

import atexit
import logging
import threading
import time

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx

from viz_model.device import describe, resolve_device
from viz_model.figures import recurrence as figs
from viz_model.lessons import recurrence as lesson
from viz_model.lessons.recurrence import BATCH, LAYERS, N_INPUTS, REPEATS, RNN, name
from viz_model.train import RECALL_DISTANCES
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, shared_results
from viz_model.ui.errors import guard, section
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import page_link, show_checks

log = logging.getLogger("attention_lab")
COST_PAGE, TRAIN_PAGE = "app_pages/cost.py", "app_pages/train.py"
MAX_STORED = 16


# -- 1. sequential dependency -------------------------------------------------------------------------------
@section("the graph depth")
def depth() -> None:
    T = st.slider("Sequence length T", 1, 1024, 64, key="recurrence_T", **share.URL,
                  help="The number of positions in one training sequence.")
    cols = st.columns(3)
    for col, kind in zip(cols, lesson.KINDS):
        d = lesson.graph_depth(kind, T, LAYERS[kind])
        col.metric(f"{name(kind)}: sequential steps", f"{d.depth:,}",
                   help=f"{d.formula} with T = {T:,} and L = {d.n_layers} layer{'s' if d.n_layers > 1 else ''}")
    fig = cached("recurrence_depth", (T,), lambda: figs.depth_chart(
        lesson.depth_lines(T), T, title="Longest chain of operations"))
    chart.show(fig, key="recurrence_depth_chart", name="graph_depth")
    st.markdown(lesson.depth_text(T))
    st.markdown(lesson.work_text(T))
    page_link(COST_PAGE, "Cost: attention's T×T time and memory, measured", ":material/speed:")


def _measure(Ts: tuple[int, ...], device_type: str, key: str) -> bool:
    store = shared_results("recurrence_timing", MAX_STORED)
    with store.turn("Another timing is running on this server right now. Try again in a moment; a finished "
                    "result for the same lengths is shared with everyone.") as mine:
        if not mine:
            return False
        bar, start = st.progress(0.0, text="Building the three models…"), time.perf_counter()
        models = lesson.comparable_models(lesson.VOCAB, lesson.D_MODEL, lesson.TRANSFORMER_LAYERS, max(Ts),
                                          lesson.RNN_LAYERS)

        def progress(frac: float) -> None:
            done = max(1, round(frac * len(Ts)))
            bar.progress(frac, text=f"T = {Ts[done - 1]:,} timed ({done}/{len(Ts)} lengths, "
                                    f"{time.perf_counter() - start:.0f} s)")

        rows = lesson.time_forward_backward(models, Ts, BATCH, device_type, REPEATS, progress)
        store.put(key, (rows, time.time(), time.perf_counter() - start))
        bar.empty()
        return True


def timing() -> None:
    """The lengths, the Measure button and, once measured (by anyone, for these lengths and device), the result."""
    with guard("the timing"):
        lo, hi = st.select_slider("Lengths T to time (powers of two)", lesson.LENGTHS, value=(16, 1024),
                                  key="recurrence_lengths", **share.URL, format_func=lambda t: f"{t:,}")
        Ts = tuple(t for t in lesson.LENGTHS if lo <= t <= hi)
        device = resolve_device(st.session_state.get(DEVICE_KEY, "auto"))
        key = input_key(describe(device), Ts, BATCH, REPEATS)
        found = shared_results("recurrence_timing", MAX_STORED).get(key)
        label = "Time again" if found else f"Time forward + backward on {device.type.upper()}"
        if st.button(label, key="recurrence_time_go", type="primary", icon=":material/timer:"):
            if _measure(Ts, device.type, key):
                st.rerun()
        if found is None:
            st.caption(f"{len(Ts)} length{'s' if len(Ts) > 1 else ''} × 3 models × {REPEATS + 1} runs (one untimed "
                       f"warm-up), batch {BATCH}, on {describe(device)} (the sidebar's Device). Nothing is timed "
                       "until you click.")
            return
        render_timing(*found, key=key)


def render_timing(rows: list[lesson.TimingRow], when: float, wall_s: float, *, key: str) -> None:
    slopes, upper = lesson.timing_slopes(rows)
    fig = cached("recurrence_timing", (key, when), lambda: figs.timing_chart(
        lesson.timing_lines(rows, slopes), title="Forward + backward against T"))
    chart.show(fig, key="recurrence_timing_chart", name="rnn_vs_transformer_time")
    st.caption(lesson.timing_caption(rows, when, wall_s, upper))
    st.table(pd.DataFrame(lesson.timing_rows(rows)).set_index("T"))
    explain_timing(rows, slopes)
    drops = lesson.timing_drops(rows)
    if drops:
        st.caption(drops)


def explain_timing(rows: list[lesson.TimingRow], slopes: dict[str, float | None]) -> None:
    """Say what this run shows, from its numbers, and why a GPU shows more."""
    shows = lesson.timing_shows(rows, slopes)
    if shows is None:
        st.info(lesson.ONE_LENGTH)
        return
    st.markdown(shows)
    if rows[0].device == "cpu":
        st.markdown(lesson.ON_A_CPU)
        st.caption(lesson.gpu_hint())
    else:
        st.markdown(lesson.ON_A_GPU)


# -- 2. gradients by distance ----------------------------------------------------------------------------------
def shipped() -> dict:
    """The three recall models (assets/models/recurrence/), loaded once per server, read-only."""
    return cached("recurrence_shipped", ("cpu",), lambda: lesson.load_shipped("cpu", read_only=True))


def curves(distance: int) -> dict[str, lesson.GradientCurve]:
    return cached("recurrence_curves", (distance, N_INPUTS), lambda: lesson.distance_curves(shipped(), distance))


def view(target: float | None, distance: int) -> tuple[lesson.RecurrenceView, float]:
    return cached("recurrence_view", (target, distance, N_INPUTS),
                  lambda: lesson.trained_view(shipped()[RNN], distance, target))


def _chain_chart(chain, title: str):
    return figs.jacobian_chart(*lesson.chain_series(chain), title=title)


def warm_distances() -> threading.Thread:
    """Once per server process: a background thread computes the gradient curves and the as-trained W_hh view of
    every distance, into the same caches the page reads. A class moving the slider then reads them instead of
    running three models' backward passes per new distance (~60 ms each on a busy 2-core server; about 7 s of
    CPU once). A streamlit cache needs a script context, so the thread gets this run's (add_script_run_ctx)."""
    return cached("recurrence_warm", (N_INPUTS,), _start_warming)


def _start_warming() -> threading.Thread:
    stop = threading.Event()

    def warm() -> None:
        for d in lesson.DISTANCES:
            if stop.is_set():
                return
            try:
                curves(d)
                view(None, d)
            except Exception:  # noqa: BLE001 - a failed warm-up only means the page computes on demand
                log.exception("warming the recurrence distances")
                return
    thread = threading.Thread(target=warm, name="recurrence-warm", daemon=True)
    add_script_run_ctx(thread)
    thread.start()
    # At exit, let it finish the distance it is on: a daemon thread stopped inside torch's backward aborted the
    # process ("terminate called without an active exception", exit code 134), e.g. a test run ending within the
    # ~7 s of warming. atexit runs before Python stops its daemon threads.
    atexit.register(lambda: (stop.set(), thread.join(timeout=60)))
    return thread


def distance_slider() -> int:
    """The recall inputs' distance, shared by the curves and the W_hh slider (a change reruns both). The first
    time it is drawn on a server, every distance's curves are computed in the background (warm_distances)."""
    warm_distances()
    return st.slider("Distance of the key in the recall inputs", lesson.DISTANCES.start, lesson.DISTANCES.stop - 1,
                     40, key="recurrence_distance", **share.URL,
                     help="Each input is '<bos> key, filler letters, :' and the last position must name the key; "
                          f"{N_INPUTS} inputs, their gradients averaged (geometric mean).")


@section("the gradient by distance")
def gradient_by_distance(distance: int) -> None:
    relative = st.toggle("Each curve divided by its value at distance 1", True, key="recurrence_relative", **share.URL,
                         help="The LSTM and the transformer are almost certain of the answer (loss ≈ 1e-8), so all "
                              "their gradients are tiny; divided, the three shapes share one axis.")
    cs = curves(distance)
    lines = [lesson.curve_line(c, f"{name(k)} · ×{c.factor_per_step:.2f} per step", relative) for k, c in cs.items()]
    fig = cached("recurrence_gradient", (distance, relative), lambda: figs.gradient_chart(
        lines, marker_distance=distance, marker_text="the key ", title="How far back the gradient reaches"))
    chart.show(fig, key="recurrence_gradient_chart", name="gradient_by_distance")
    st.table(pd.DataFrame(lesson.gradient_rows(cs, distance)).set_index("model"))
    st.markdown(lesson.gradient_text(cs, distance))
    show_checks(lesson.gradient_claims(cs))


@section("the W_hh slider")
def trained_rnn(distance: int) -> None:
    trained = lesson.trained_norm(shipped()[RNN].model)
    options = sorted({*lesson.W_HH_CHOICES, trained})
    share.valid("recurrence_whh", options, trained)  # the trained value follows the shipped model
    value = st.select_slider("Rescale the trained RNN's W_hh to spectral norm ‖W_hh‖₂", options, value=trained,
                             key="recurrence_whh", **share.URL,
                             format_func=lambda x: f"{x:.2f} (as trained)" if x == trained else f"{x:g}",
                             help="W_hh of a copy is multiplied by one number; the rest is unchanged.")
    target = None if value == trained else float(value)
    v, tanh = view(target, distance)
    base, _ = view(None, distance)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("‖W_hh‖₂", f"{v.spectral_norm:.2f}", help=f"as trained: {base.spectral_norm:.2f}")
    c2.metric("gradient × per step", f"{v.curve.factor_per_step:.3f}")
    c3.metric("mean tanh′", f"{tanh:.2f}")
    c4.metric(f"‖J ⋯ J‖ over {distance} steps", f"{float(v.chain.product_norms[distance]):.1e}")
    c1, c2 = st.columns(2)
    fig = cached("recurrence_whh", (target, distance), lambda: figs.gradient_chart(
        lesson.whh_lines(base, v), marker_distance=distance, marker_text="the key ", title="Trained RNN: ‖∂ℓ/∂x_t‖"))
    chart.show(fig, key="recurrence_whh_gradient", name="rnn_w_hh_gradient", container=c1)
    fig = cached("recurrence_whh_chain", (target, distance), lambda: _chain_chart(
        v.chain, "The product of step Jacobians (first input)"))
    chart.show(fig, key="recurrence_whh_chain", name="rnn_w_hh_jacobians", container=c2)
    st.markdown(lesson.whh_note(v, tanh))


@section("the linear-regime RNN")
def linear_regime() -> None:
    gain = st.select_slider("gain = ‖W_hh‖₂ of the linear-regime RNN", lesson.GAINS, value=1.1, key="recurrence_gain",
                            **share.URL,
                            format_func=lambda g: f"{g:.2f}")
    v = cached("recurrence_linear", (gain,), lambda: lesson.linear_view(gain))
    c1, c2 = st.columns(2)
    fig = cached("recurrence_linear_fig", (gain,), lambda: figs.gradient_chart(
        lesson.linear_lines(v, gain), title=f"Linear regime, gain {gain:.2f}"))
    chart.show(fig, key="recurrence_linear_gradient", name="linear_rnn_gradient", container=c1)
    fig = cached("recurrence_linear_chain", (gain,), lambda: _chain_chart(v.chain, "Its step Jacobians"))
    chart.show(fig, key="recurrence_linear_chain", name="linear_rnn_jacobians", container=c2)
    show_checks(lesson.linear_claims(v, gain))
    st.caption(lesson.linear_text(v, gain))


# -- 3. the task where it matters ------------------------------------------------------------------------------
def _live_store() -> dict:
    return cached("recurrence_accuracy_store", ("store",), dict)


def _evaluate(n: int) -> list[lesson.AccuracyRow]:
    bar = st.progress(0.0, text="Evaluating the RNN…")
    models = shipped()
    kinds = list(models)

    def progress(frac: float) -> None:
        done = round(frac * len(kinds))
        bar.progress(frac, text=f"{done}/{len(kinds)} models evaluated" + (
            f"; now the {name(kinds[done])}…" if done < len(kinds) else ""))

    rows = lesson.accuracy_table({k: c.model for k, c in models.items()}, models[RNN].tokenizer,
                                 RECALL_DISTANCES, n, progress)
    bar.empty()
    return rows


@section("recall accuracy")
def accuracy(n: int = 128) -> None:
    models = shipped()
    saved = lesson.saved_accuracy(models)
    store = _live_store()
    if st.button("Evaluate the three models again now" if n in store else "Evaluate the three models now",
                 key="recurrence_accuracy_go", icon=":material/fact_check:",
                 help=f"{n} fresh held-out inputs at each of {len(RECALL_DISTANCES)} distances, for each model."):
        store[n] = _evaluate(n)
    live = {r.kind: r.accuracy for r in store[n]} if n in store else None
    shown = live or saved
    source = "evaluated now" if live else "saved when trained"
    fig = cached("recurrence_accuracy", (input_key(shown, source),), lambda: figs.accuracy_chart(
        lesson.accuracy_lines(shown, source), lesson.CHANCE, title="Recall accuracy against distance"))
    chart.show(fig, key="recurrence_accuracy_chart", name="recall_accuracy")
    params = {k: c.model.num_params() for k, c in models.items()}
    st.table(pd.DataFrame(lesson.accuracy_rows(shown, params)).set_index("model"))
    if live:
        show_checks(lesson.accuracy_claims(live, saved, n))
    else:
        st.caption("The accuracy saved in each model's file when it was trained; the button evaluates it again "
                   "on this server.")
    st.markdown(lesson.accuracy_text(shown))
    holds, lstm = lesson.lstm_text(shown)
    (st.info if holds else st.markdown)(lstm)
    st.markdown(lesson.trained_text(models[RNN].metadata))
    page_link(TRAIN_PAGE, "Train: pick the task “recall”", ":material/model_training:")
