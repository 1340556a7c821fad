"""Streamlit sections of the RNN vs Transformer page: graph depth and timing against T, gradients by distance with
the W_hh slider and the linear-regime RNN, and recall accuracy by distance. The measuring is lessons.recurrence."""

from __future__ import annotations

import atexit
import logging
import math
import threading
import time

import pandas as pd
import streamlit as st
import torch
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import add_script_run_ctx

from viz_model import gradients
from viz_model.data import RECALL_KEYS, TASK_LABELS
from viz_model.device import describe, resolve_device
from viz_model.figures import recurrence as figs
from viz_model.figures.common import to_numpy
from viz_model.lessons import recurrence as lesson
from viz_model.lessons.common import fit_slope
from viz_model.train import RECALL_DISTANCES
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, shared_results
from viz_model.ui.errors import guard, section
from viz_model.ui.sidebar import DEVICE_KEY
from viz_model.ui.widgets import check_line

log = logging.getLogger("attention_lab")
COST_PAGE, TRAIN_PAGE = "app_pages/cost.py", "app_pages/train.py"
D_MODEL, TRANSFORMER_LAYERS, RNN_LAYERS = 64, 2, 1    # the timed models (lesson.comparable_models)
VOCAB, BATCH, REPEATS = 256, 8, 3
LAYERS = {"rnn": RNN_LAYERS, "lstm": RNN_LAYERS, "transformer": TRANSFORMER_LAYERS}
N_INPUTS = 16                                          # recall inputs averaged per gradient curve
W_HH_CHOICES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 6.0, 8.0, 12.0)
GAINS = tuple(round(0.5 + 0.05 * i, 2) for i in range(21))   # 0.50 … 1.50
LINEAR_T, LINEAR_VOCAB = 41, 32
MAX_STORED = 16


def name(kind: str) -> str:
    return figs.KIND_NAMES.get(kind, kind)


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


# -- 1. sequential dependency -------------------------------------------------------------------------------
@section("the graph depth")
def depth() -> None:
    T = st.slider("Sequence length T", 1, 1024, 64, key="recurrence_T", **share.URL,
                  help="The number of positions in one training sequence.")
    depths = {k: lesson.graph_depth(k, T, LAYERS[k]) for k in lesson.KINDS}
    cols = st.columns(3)
    for col, (kind, d) in zip(cols, depths.items()):
        col.metric(f"{name(kind)}: sequential steps", f"{d.depth:,}",
                   help=f"{d.formula} with T = {T:,} and L = {d.n_layers} layer{'s' if d.n_layers > 1 else ''}")
    Ts = sorted({2**i for i in range(11)} | {T})
    lines = [dict(name=f"{name(k)} ({lesson.graph_depth(k, 1, LAYERS[k]).formula}, L = {LAYERS[k]})", kind=k, T=Ts,
                  depth=[lesson.graph_depth(k, t, LAYERS[k]).depth for t in Ts]) for k in ("rnn", "transformer")]
    fig = cached("recurrence_depth", (T,), lambda: figs.depth_chart(lines, T, title="Longest chain of operations"))
    chart.show(fig, key="recurrence_depth_chart", name="graph_depth")
    rnn, tr = depths["rnn"], depths["transformer"]
    st.markdown(f"The RNN's h_t = f(x_t, h_(t−1)) cannot start before h_(t−1) is done, even in training, where "
                f"every x_t is known: **{rnn.depth:,}** steps one after another for T = {T:,} (the LSTM alike). "
                f"The transformer computes all {T:,} positions of a layer at once from the layer below: "
                f"**{tr.depth}** steps, whatever T is.")
    work(T)


def work(T: int) -> None:
    """O(n·d²) against O(n²·d), in words, with this T and the timed models' d."""
    d = D_MODEL
    rnn, attn = T * d * d, T * T * d
    more = "more" if attn > rnn else "fewer" if attn < rnn else "as many"
    st.markdown(f"**Work, not depth.** An RNN does **O(n·d²)**: one d×d matrix times a vector per step, n steps. "
                f"Attention does **O(n²·d)**: a d-long dot product for every pair of positions. With n = {T:,} and "
                f"d = {d}: n·d² = {rnn:,} and n²·d = {attn:,} multiply-adds, so attention does **{more}** "
                f"(n/d = {T / d:.3g}); they cross at n = d. The transformer's own projections and MLP are "
                "O(n·d²) too; the n² term is what attention adds, and all of it can run at once.")
    try:
        st.page_link(COST_PAGE, label="Cost: attention's T×T time and memory, measured", icon=":material/speed:")
    except StreamlitAPIException:  # not registered in this app
        pass


def _measure(Ts: tuple[int, ...], device: torch.device, key: str) -> bool:
    store = shared_results("recurrence_timing", MAX_STORED)
    with store.turn("Another timing is running on this server right now. Try again in a moment; a finished "
                    "result for the same lengths is shared with everyone.") as mine:
        if not mine:
            return False
        bar, start = st.progress(0.0, text="Building the three models…"), time.perf_counter()
        models = lesson.comparable_models(VOCAB, D_MODEL, TRANSFORMER_LAYERS, max(Ts), RNN_LAYERS)

        def progress(frac: float) -> None:
            done = max(1, round(frac * len(Ts)))
            bar.progress(frac, text=f"T = {Ts[done - 1]:,} timed ({done}/{len(Ts)} lengths, "
                                    f"{time.perf_counter() - start:.0f} s)")

        rows = lesson.time_forward_backward(models, Ts, BATCH, device.type, REPEATS, progress)
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
            if _measure(Ts, device, key):
                st.rerun()
        if found is None:
            st.caption(f"{len(Ts)} length{'s' if len(Ts) > 1 else ''} × 3 models × {REPEATS + 1} runs (one untimed "
                       f"warm-up), batch {BATCH}, on {describe(device)} (the sidebar's Device). Nothing is timed "
                       "until you click.")
            return
        render_timing(*found, key=key)


def timing_table(rows: list[lesson.TimingRow]) -> pd.DataFrame:
    kinds = list(dict.fromkeys(r.kind for r in rows))
    Ts = list(dict.fromkeys(r.T for r in rows))
    by = {(r.kind, r.T): r for r in rows}
    table = []
    for T in Ts:
        row = {"T": f"{T:,}"}
        for k in kinds:
            row[f"{name(k)} ms"] = _fmt(by[k, T].ms)
            row[f"{name(k)} × T={Ts[0]}"] = f"{by[k, T].ratio:.3g}"
        row["RNN steps"] = f"{lesson.graph_depth('rnn', T, RNN_LAYERS).depth:,}"
        table.append(row)
    return pd.DataFrame(table).set_index("T")


def render_timing(rows: list[lesson.TimingRow], when: float, wall_s: float, *, key: str) -> None:
    kinds = list(dict.fromkeys(r.kind for r in rows))
    series = {k: ([r.T for r in rows if r.kind == k], [r.ms for r in rows if r.kind == k]) for k in kinds}
    upper = sorted(series[kinds[0]][0])[(len(series[kinds[0]][0]) - 1) // 2:]  # the longer half: past the overheads
    slopes = {k: fit_slope(*zip(*[(t, ms) for t, ms in zip(*series[k]) if t in upper])) for k in kinds}
    lines = [dict(name=f"{name(k)} · slope {'n/a' if slopes[k] is None else f'{slopes[k]:.2f}'}", kind=k,
                  T=series[k][0], ms=series[k][1]) for k in kinds]
    fig = cached("recurrence_timing", (key, when), lambda: figs.timing_chart(
        lines, title="Forward + backward against T"))
    chart.show(fig, key="recurrence_timing_chart", name="rnn_vs_transformer_time")
    params = ", ".join(f"{name(k)} {next(r.params for r in rows if r.kind == k):,}" for k in kinds)
    age = max(0, int(time.time() - when))
    ago = f"{age} s ago" if age < 120 else f"{age // 60} min ago"
    st.caption(f"Measured on **{rows[0].device.upper()}** {ago} (took {wall_s:.0f} s): median of {REPEATS} runs "
               f"of one batch of {BATCH} after a warm-up. Parameters: {params} (the RNN and LSTM sized to the "
               f"transformer's count). Slope of the log–log fit over T = {upper[0]:,} … {upper[-1]:,}: 1 = time "
               "doubles with T.")
    st.table(timing_table(rows))
    explain_timing(rows, slopes)
    drops = [f"{name(k)} T = {a:,} → {b:,}" for k, (Ts, ms) in series.items()
             for a, b, x, y in zip(Ts, Ts[1:], ms, ms[1:]) if y < 0.9 * x]
    if drops:
        st.caption("Time fell as T grew (" + "; ".join(drops) + "): other work on this machine got in the way of "
                   "those runs. The models take turns at each T, so they were slowed alike; *Time again* for a "
                   "steadier curve.")


def explain_timing(rows: list[lesson.TimingRow], slopes: dict[str, float | None]) -> None:
    """Say what this run shows, from its numbers, and why a GPU shows more."""
    T_max = max(r.T for r in rows)
    last = {r.kind: r.ms for r in rows if r.T == T_max}
    slowest = max(last, key=last.get)
    fitted = [s for s in slopes.values() if s is not None]
    if not fitted:
        st.info("Only one length was timed, so there is no growth to read. Widen the range of T.")
        return
    shape = ("all three grow **roughly linearly** in T" if all(0.7 <= s <= 1.3 for s in fitted)
             else "their slopes are " + ", ".join(f"{name(k)} {s:.2f}" for k, s in slopes.items() if s is not None))
    on = "this CPU" if rows[0].device == "cpu" else f"this {rows[0].device.upper()} device"
    st.markdown(f"**What {on} shows:** {shape}, and at T = {T_max:,} the **{name(slowest)}** is the slowest "
                f"(" + ", ".join(f"{name(k)} {_fmt(v)} ms" for k, v in last.items()) + ").")
    if rows[0].device == "cpu":
        st.markdown("On a CPU a few cores do all the arithmetic, so the transformer's T independent positions "
                    "still pass through the same few cores: computing them \"at once\" saves little, and attention "
                    "adds its T² work on top. The RNN's T steps are sequential, but each is a small matrix-vector "
                    "product a CPU does quickly. **A GPU shows more:** the transformer's T positions are one "
                    "batched matmul that thousands of cores share, so its time stays nearly flat until the chip "
                    "is full, while the RNN's T steps still run one after another, each a kernel that cannot start "
                    "before the last one ends.")
        gpu = (f"This server has a GPU ({torch.cuda.get_device_name(0)}): choose **cuda** as the sidebar's Device "
               "and time again." if torch.cuda.is_available() else
               "There is no GPU on this server (`torch.cuda.is_available()` is False), so only the CPU is timed.")
        st.caption(gpu)
    else:
        st.markdown("Here the transformer's T positions are one batched matmul the GPU's cores share, while the "
                    "RNN's T steps run one after another, each waiting for the one before: a flatter slope for "
                    "the transformer is the parallelism; the RNN's slope near 1 is its T sequential steps.")


# -- 2. gradients by distance ----------------------------------------------------------------------------------
def _load_shipped() -> dict:
    models = lesson.load_shipped("cpu")
    for ckpt in models.values():
        ckpt.model.requires_grad_(False)  # shared by every user: read-only
    return models


def shipped() -> dict:
    """The three recall models (assets/models/recurrence/), loaded once per server."""
    return cached("recurrence_shipped", ("cpu",), _load_shipped)


def _curves(distance: int) -> dict[str, lesson.GradientCurve]:
    models = shipped()
    ids = lesson.recall_inputs(models["rnn"].tokenizer, distance, n=N_INPUTS)  # (n, distance + 2)
    return {k: lesson.gradient_curve(c.model, ids, k) for k, c in models.items()}


def curves(distance: int) -> dict[str, lesson.GradientCurve]:
    return cached("recurrence_curves", (distance, N_INPUTS), lambda: _curves(distance))


def _curve_line(c: lesson.GradientCurve, label: str, relative: bool, **extra) -> dict:
    y = to_numpy(c.norms)
    if relative:
        y = y / y[1]
    return {"name": label, "kind": c.kind, "d": list(range(len(y))), "y": [float(v) for v in y], **extra}


def gradient_table(cs: dict[str, lesson.GradientCurve], distance: int) -> pd.DataFrame:
    rows = []
    for k, c in cs.items():
        n = to_numpy(c.norms)
        rows.append({"model": name(k), "slope ln/step": f"{c.slope:.3f}", "factor per step": f"{c.factor_per_step:.3f}",
                     "‖∂ℓ/∂x‖ at d=1": f"{n[1]:.2e}", f"at the key (d={distance})": f"{n[distance]:.2e}",
                     "key ÷ d=1": f"{lesson.key_ratio(c, distance):.3g}"})
    return pd.DataFrame(rows).set_index("model")


def _view(target: float | None, distance: int) -> tuple[lesson.RecurrenceView, float]:
    rnn = shipped()["rnn"]
    ids = lesson.recall_inputs(rnn.tokenizer, distance, n=N_INPUTS)  # (n, distance + 2)
    view = lesson.rescaled_view(rnn.model, ids, target)
    model = rnn.model if target is None else gradients.rescale_recurrence(rnn.model, target)
    return view, lesson.mean_tanh_slope(model, ids)


def view(target: float | None, distance: int) -> tuple[lesson.RecurrenceView, float]:
    return cached("recurrence_view", (target, distance, N_INPUTS), lambda: _view(target, distance))



def _chain_chart(chain: gradients.JacobianChain, title: str):
    steps = to_numpy(chain.step_norms)[::-1]  # J_(T−1) first: entry d−1 is the d-th factor of the product
    return figs.jacobian_chart([float(v) for v in steps], [float(v) for v in to_numpy(chain.product_norms)],
                          [float(v) for v in to_numpy(chain.bound)], title=title)


DISTANCES = range(4, 61)  # the distance slider's values


def warm_distances() -> threading.Thread:
    """Once per server process: a background thread computes the gradient curves and the as-trained W_hh view of
    every distance, into the same caches the page reads. A class moving the slider then reads them instead of
    running three models' backward passes per new distance (~60 ms each on a busy 2-core server; about 7 s of
    CPU once). A streamlit cache needs a script context, so the thread gets this run's (add_script_run_ctx)."""
    return cached("recurrence_warm", (N_INPUTS,), _start_warming)


def _start_warming() -> threading.Thread:
    stop = threading.Event()

    def warm() -> None:
        for d in DISTANCES:
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
    return st.slider("Distance of the key in the recall inputs", DISTANCES.start, DISTANCES.stop - 1, 40,
                     key="recurrence_distance", **share.URL,
                     help="Each input is '<bos> key, filler letters, :' and the last position must name the key; "
                          f"{N_INPUTS} inputs, their gradients averaged (geometric mean).")


@section("the gradient by distance")
def gradient_by_distance(distance: int) -> None:
    relative = st.toggle("Each curve divided by its value at distance 1", True, key="recurrence_relative", **share.URL,
                         help="The LSTM and the transformer are almost certain of the answer (loss ≈ 1e-8), so all "
                              "their gradients are tiny; divided, the three shapes share one axis.")
    cs = curves(distance)
    lines = [_curve_line(c, f"{name(k)} · ×{c.factor_per_step:.2f} per step", relative) for k, c in cs.items()]
    fig = cached("recurrence_gradient", (distance, relative), lambda: figs.gradient_chart(
        lines, marker_distance=distance, marker_text="the key ", title="How far back the gradient reaches"))
    chart.show(fig, key="recurrence_gradient_chart", name="gradient_by_distance")
    st.table(gradient_table(cs, distance))
    # the words come from the table's own numbers: its factor per step and its key ÷ d=1
    words = {k: lesson.gradient_words(c.factor_per_step, lesson.key_ratio(c, distance), distance)
             for k, c in cs.items()}
    st.markdown(f"Fitted over distances 1 … {distance} (0 is the ':' itself, {distance + 1} the `<bos>`): the RNN's "
                f"gradient {words['rnn']}; the LSTM's (its additive cell path) {words['lstm']}; the transformer's "
                f"{words['transformer']}: every position is at most {TRANSFORMER_LAYERS} layers from the output, "
                "and attention reads the key directly.")
    rnn, lstm = cs["rnn"], cs["lstm"]
    check_line(rnn.factor_per_step < lstm.factor_per_step, f"the RNN's gradient keeps less per step than the LSTM's "
               f"(×{rnn.factor_per_step:.3f} vs ×{lstm.factor_per_step:.3f})")


def _whh_note(v: lesson.RecurrenceView, tanh: float) -> str:
    s, f = v.spectral_norm, v.curve.factor_per_step
    steps = to_numpy(v.chain.step_norms)
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


@section("the W_hh slider")
def trained_rnn(distance: int) -> None:
    rnn = shipped()["rnn"]
    trained = round(gradients.spectral_norm(rnn.model), 2)
    options = sorted({*W_HH_CHOICES, trained})
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
    lines = [_curve_line(base.curve, f"as trained (‖W_hh‖₂ {base.spectral_norm:.2f})", False, kind="trained",
                         dash="dot"),
             _curve_line(v.curve, f"‖W_hh‖₂ {v.spectral_norm:.2f} · ×{v.curve.factor_per_step:.2f} per step", False)]
    c1, c2 = st.columns(2)
    fig = cached("recurrence_whh", (target, distance), lambda: figs.gradient_chart(
        lines, marker_distance=distance, marker_text="the key ", title="Trained RNN: ‖∂ℓ/∂x_t‖"))
    chart.show(fig, key="recurrence_whh_gradient", name="rnn_w_hh_gradient", container=c1)
    fig = cached("recurrence_whh_chain", (target, distance), lambda: _chain_chart(
        v.chain, "The product of step Jacobians (first input)"))
    chart.show(fig, key="recurrence_whh_chain", name="rnn_w_hh_jacobians", container=c2)
    st.markdown(_whh_note(v, tanh))


def _linear(gain: float) -> lesson.RecurrenceView:
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, LINEAR_VOCAB, (4, LINEAR_T), generator=gen)  # (4, T)
    return lesson.rescaled_view(lesson.linear_regime_rnn(gain, vocab_size=LINEAR_VOCAB), ids)


@section("the linear-regime RNN")
def linear_regime() -> None:
    gain = st.select_slider("gain = ‖W_hh‖₂ of the linear-regime RNN", GAINS, value=1.1, key="recurrence_gain",
                            **share.URL,
                            format_func=lambda g: f"{g:.2f}")
    v = cached("recurrence_linear", (gain,), lambda: _linear(gain))
    y = to_numpy(v.curve.norms)
    ds = list(range(len(y)))
    lines = [_curve_line(v.curve, f"measured · slope {v.curve.slope:.4f}", False, mode="markers", size=7),
             dict(name=f"{gain:.2f}^d (drawn through distance 1)", kind="reference", dash="dot", mode="lines", d=ds,
                  y=[float(y[1] * gain ** (d - 1)) for d in ds])]
    c1, c2 = st.columns(2)
    fig = cached("recurrence_linear_fig", (gain,), lambda: figs.gradient_chart(
        lines, title=f"Linear regime, gain {gain:.2f}"))
    chart.show(fig, key="recurrence_linear_gradient", name="linear_rnn_gradient", container=c1)
    fig = cached("recurrence_linear_chain", (gain,), lambda: _chain_chart(v.chain, "Its step Jacobians"))
    chart.show(fig, key="recurrence_linear_chain", name="linear_rnn_jacobians", container=c2)
    ln = math.log(gain)
    check_line(abs(v.curve.slope - ln) < 1e-3, f"fitted slope {v.curve.slope:.4f} per step = ln({gain:.2f}) = "
               f"{ln:.4f}: the gradient is {gain:.2f}^d, one factor ‖J_t‖₂ = "
               f"{float(to_numpy(v.chain.step_norms).mean()):.3f} per step")
    word = "dives" if gain < 1 else "explodes" if gain > 1 else "stays level"
    st.caption(f"Inputs of size 1e-6 keep tanh′ = 1, and W_hh = {gain:.2f} × an orthogonal matrix, so every step "
               f"multiplies the gradient by exactly {gain:.2f}: it {word} (×{gain ** (len(y) - 2):.2g} over "
               f"{len(y) - 2} steps).")


# -- 3. the task where it matters ------------------------------------------------------------------------------
def saved_accuracy() -> dict[str, dict[int, float]]:
    """Accuracy by distance recorded in each shipped model's metadata when it was trained."""
    return {k: {int(d): float(a) for d, a in c.metadata.get("accuracy_by_distance", {}).items()}
            for k, c in shipped().items()}


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

    rows = lesson.accuracy_table({k: c.model for k, c in models.items()}, models["rnn"].tokenizer,
                                 RECALL_DISTANCES, n, progress)
    bar.empty()
    return rows


def accuracy_frame(acc: dict[str, dict[int, float]], params: dict[str, int]) -> pd.DataFrame:
    rows = [{"model": name(k), "params": f"{params[k]:,}", **{f"d={d}": f"{a:.2f}" for d, a in by_d.items()}}
            for k, by_d in acc.items()]
    return pd.DataFrame(rows).set_index("model")


def _accuracy_lines(acc: dict[str, dict[int, float]], source: str) -> list[dict]:
    style = {"lstm": dict(width=6), "transformer": dict(dash="dash")}  # both at 1.0: the wide LSTM shows beneath
    return [dict(name=f"{name(k)} ({source})", kind=k, d=list(by_d), accuracy=list(by_d.values()), **style.get(k, {}))
            for k, by_d in acc.items()]


@section("recall accuracy")
def accuracy(n: int = 128) -> None:
    models = shipped()
    saved = saved_accuracy()
    store = _live_store()
    if st.button("Evaluate the three models again now" if n in store else "Evaluate the three models now",
                 key="recurrence_accuracy_go", icon=":material/fact_check:",
                 help=f"{n} fresh held-out inputs at each of {len(RECALL_DISTANCES)} distances, for each model."):
        store[n] = _evaluate(n)
    live = {r.kind: r.accuracy for r in store[n]} if n in store else None
    shown = live or saved
    chance = 1 / len(RECALL_KEYS)
    source = "evaluated now" if live else "saved when trained"
    lines = _accuracy_lines(shown, source)
    fig = cached("recurrence_accuracy", (input_key(shown, source),), lambda: figs.accuracy_chart(
        lines, chance, title="Recall accuracy against distance"))
    chart.show(fig, key="recurrence_accuracy_chart", name="recall_accuracy")
    st.table(accuracy_frame(shown, {k: c.model.num_params() for k, c in models.items()}))
    if live:
        diff = max(abs(live[k][d] - saved[k].get(d, math.nan)) for k in live for d in live[k])
        check_line(diff == 0, f"evaluated now on {n} held-out inputs per distance: largest difference from the "
                              f"accuracy saved when the models were trained is {diff:.3f}")
    else:
        st.caption("The accuracy saved in each model's file when it was trained; the button evaluates it again "
                   "on this server.")
    accuracy_notes(shown, chance)


def accuracy_notes(acc: dict[str, dict[int, float]], chance: float) -> None:
    rnn, lstm, tr = acc["rnn"], acc["lstm"], acc["transformer"]
    d0, d1 = min(rnn), max(rnn)
    st.markdown(f"The RNN falls off with distance: **{rnn[d0]:.2f}** at d = {d0}, **{rnn[d1]:.2f}** at d = {d1} "
                f"(chance is 1/{len(RECALL_KEYS)} = {chance:.3f}). The transformer is never below "
                f"**{min(tr.values()):.2f}**: attention reads the key in one step, however far back it is.")
    low = min(lstm.values())
    if low >= 0.99:
        st.info(f"**The LSTM does not fail here:** never below {low:.2f}, up to distance {max(lstm)}. The "
                "lecture's “LSTMs still decay” is about the gradient — the chart in the gradient tab shows its "
                "slower decay per step — not about this task, whose dependency its additive cell path carries.")
    else:
        st.markdown(f"The LSTM holds longer than the RNN but drops to {low:.2f} at its worst distance.")
    train_pointer()


def train_pointer() -> None:
    meta = shipped()["rnn"].metadata
    st.markdown(f"These models were trained for {meta.get('steps', '?')} steps (seed {meta.get('seed', '?')}) on "
                f"the task *{TASK_LABELS['recall']}*. On the Train page that task trains an RNN, an LSTM or a "
                "transformer in front of you: pick the model kind, or run all three side by side under "
                "*Compare setups → RNN vs LSTM vs transformer*.")
    try:
        st.page_link(TRAIN_PAGE, label="Train: pick the task “recall”", icon=":material/model_training:")
    except StreamlitAPIException:
        pass
