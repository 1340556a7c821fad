"""Streamlit glue for the Normalization page: the axes of LayerNorm/BatchNorm/RMSNorm, the four reasons, residual
connections, pre- vs post-norm × warm-up, and the batch dimension on the sidebar's model."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from viz_model.checkpoint import Checkpoint
from viz_model.figures.common import COLORWAY
from viz_model.figures.normalization import (
    KIND_NAMES,
    loss_chart,
    norm_groups,
    padding_bars,
    per_layer_chart,
    sample_matrices,
)
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.lessons import normalization as lesson
from viz_model.model_text import uses_bos
from viz_model.tokenizer import Encoded, load_tokenizer
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, model_id, shared_results
from viz_model.ui.errors import section
from viz_model.ui.widgets import layer_head, show_check, show_checks

ROOT = Path(__file__).resolve().parents[2]
TRAIN_PAGE = "app_pages/train.py"
STEPS = (10, 30, 60, 120)         # training steps a student may pick for the short runs
MAX_STORED = 16                   # finished runs kept per server (one per setting)
MAX_BATCH_T = 12                  # tokens per sample in the batch view (two heatmaps and a loss table stay readable)
LR = 1e-2                         # the short runs' learning rate (AdamW)
# Okabe–Ito (figures.common.COLORWAY): Tableau green beside red was ΔE00 4.6 apart under deuteranopia (#29)
COLORS = {"pre": COLORWAY[0], "post": COLORWAY[1], True: COLORWAY[2], False: COLORWAY[3]}


# -- the random batch of the first two views ----------------------------------------------------------------------
def random_batch() -> lesson.Batch:
    """A seeded random (N, T, d_model) batch, features on different scales, from widgets bound to the URL."""
    c1, c2, c3, c4 = st.columns(4)
    N = c1.select_slider("Samples N", (2, 3, 4), value=3, key="norm_N", **share.URL)
    T = c2.select_slider("Positions T", tuple(range(2, 7)), value=4, key="norm_T", **share.URL)
    d = c3.select_slider("Features d_model", (4, 6, 8, 12, 16), value=8, key="norm_d", **share.URL)
    seed = c4.number_input("Random seed", 0, 9999, 0, key="norm_seed", **share.URL,
                           help="Another seed draws another batch.")
    x = lesson.random_batch(N, T, d, seed)
    st.caption(f"A random batch shaped (N, T, d_model) = {tuple(x.shape)}: features drawn with standard deviations "
               "from 0.5 to 3 and mean 1, so normalising changes something you can see.")
    return x


# -- 1. which axis -------------------------------------------------------------------------------------------------
@section("the axes view")
def axes_view() -> None:
    x = random_batch()
    # One batch for a whole class (the same seed and shape): its norms and figures are computed once per server.
    stats, figures, table, tight = cached("norm_axes", (input_key(x.numpy().tobytes()),), lambda: _axes(x))
    for col, (kind, s) in zip(st.columns(3), stats.items()):
        col.markdown(f"**{KIND_NAMES[kind]}**: {s.axes}")
        chart.show(figures[kind], key=f"norm_groups_{kind}", name=f"norm_groups_{kind}", container=col)
    st.caption(lesson.GROUPS_CAPTION)
    st.table(table)
    claims = lesson.axes_claims(stats)
    show_checks(claims[:2])  # LayerNorm's, then why its variance is not exactly 1
    st.caption(lesson.epsilon_note(stats["layernorm"], tight))
    show_checks(claims[2:])


def _axes(x: lesson.Batch) -> tuple[dict[str, lesson.NormStats], dict, pd.DataFrame, lesson.NormStats]:
    """Each norm of the batch x (N, T, d), its figure, the statistics table, and LayerNorm with ε = 1e-12 (read-only,
    shared)."""
    stats = lesson.all_norms(x)
    figures = {k: norm_groups(s.output, s.kind, lesson.group_stats(s), title=f"{KIND_NAMES[s.kind]} output")
               for k, s in stats.items()}
    table = pd.DataFrame(lesson.stats_rows(stats, KIND_NAMES)).set_index("norm")
    return stats, figures, table, lesson.normalize(x, "layernorm", eps=1e-12)


# -- 2. the four reasons -------------------------------------------------------------------------------------------
@section("the four reasons")
def reasons_view() -> None:
    x = random_batch()
    T = x.shape[1]
    share.valid("norm_pad", range(1, T + 1), T)
    n_pad = st.slider("Padding positions at the end of sample 2", 1, T, min(2, T), key="norm_pad", **share.URL,
                      help="These positions of sample 2 are replaced by the zero vector, as a <pad> embedding.")
    pad, one = lesson.padding_effect(x, n_pad), lesson.batch_of_one(x)
    gen, te = lesson.one_token_at_a_time(x, lesson.WARMUP_BATCHES), lesson.train_vs_eval(x, lesson.WARMUP_BATCHES)
    st.table(pd.DataFrame(lesson.reasons_rows(pad, one, gen, te)).set_index("reason"))
    padding, single, alone, train_eval = lesson.reasons_claims(pad, one, gen, te)
    st.header("1 · Padding in another sample")
    show_check(padding)
    fig = cached("norm_padding", (input_key(x.numpy().tobytes()), n_pad), lambda: padding_bars(
        pad.bn_mean[0], pad.bn_mean[1], pad.bn_var[0], pad.bn_var[1], n_pad=n_pad,
        title="BatchNorm's statistics, with and without padding in sample 2"))
    chart.show(fig, key="norm_padding_chart", name="batchnorm_padding")
    st.header("2 · A batch of one")
    st.markdown("BatchNorm in training mode on a single token (N × T = 1) — torch's own answer:")
    st.code(one.error or "(no error)", language=None, wrap_lines=True)
    show_check(single)
    st.header("3 · Generation, one token at a time")
    show_check(alone)
    st.markdown("BatchNorm (training mode) on the one new token:")
    st.code(gen.batchnorm_train_error or "(no error)", language=None, wrap_lines=True)
    st.caption(lesson.running_stats_note(gen))
    st.header("4 · Train vs eval")
    show_check(train_eval)


# -- the short training runs: behind a button, kept per setting for every user --------------------------------------
def word_tokenizer():
    return cached("tokenizer", ("word",), lambda: load_tokenizer("word"))


def run_once(name: str, key: str, label: str, work: str,
             fn: Callable[[Callable[[float], None]], list[lesson.Run]]) -> tuple[list[lesson.Run], float] | None:
    """The runs of this setting if anyone measured them; else a button that runs them with a progress bar."""
    store = shared_results("normalization", MAX_STORED)
    found = store.get(key)
    if found is not None:
        return found
    if not st.button(label, key=f"norm_{name}_go", type="primary", icon=":material/play_arrow:"):
        st.caption(f"{work} Nothing runs until you click; the result is kept for these settings and shared.")
        return None
    with store.turn("Another run is in progress on this server (one at a time keeps it responsive). Try again in "
                    "a moment; a finished run is shared with everyone.") as mine:
        if not mine:
            return None
        bar, start = st.progress(0.0, text="Building the models…"), time.perf_counter()
        runs = fn(lambda f: bar.progress(min(float(f), 1.0), text=f"Training — {f:.0%} of the steps, "
                                                                  f"{time.perf_counter() - start:.0f} s"))
        store.put(key, (runs, time.perf_counter() - start))
    st.rerun()  # draw the kept result, without the button


def _steps_widget(name: str, default: int = 60) -> int:
    return int(st.select_slider("Training steps per run", STEPS, value=default, key=f"norm_{name}_steps", **share.URL))


# -- 3. residual connections --------------------------------------------------------------------------------------
@section("the residual view")
def residual_view() -> None:
    steps = _steps_widget("res", default=30)
    key = input_key("residual", steps, 12, LR)
    found = run_once("res", key, "Train both 12-block stacks", f"Two 12-block models × {steps} steps.",
                     lambda progress: lesson.residual_comparison(word_tokenizer(), steps=steps, lr=LR,
                                                                progress=progress))
    if found is None:
        return
    (with_res, without), wall = found
    st.caption(f"Trained on this server's CPU in {wall:.1f} s: tiny preset (d_model {with_res.config.d_model}), "
               f"12 pre-norm blocks, same seed, same batches, learning rate {LR:g}.")
    c1, c2 = st.columns(2)
    for col, what, y_title, title in (
            (c1, "stream", "‖∂L/∂x‖ per token", "Gradient of the stream entering each block, at init"),
            (c2, "params", "‖∂L/∂θ‖", "Gradient of each block's parameters, at init")):
        fig = cached("norm_res_grads", (key, what), lambda w=what, y=y_title, t=title: per_layer_chart(
            [dict(name="with the residual x + F(x)", y=getattr(with_res.gradients, w), color=COLORS[True]),
             dict(name="without it: F(x) only", y=getattr(without.gradients, w), color=COLORS[False])],
            y_title=y, title=t))
        chart.show(fig, key=f"norm_res_{what}", name=f"residual_gradients_{what}", container=col)
    show_checks(lesson.residual_claims(with_res, without))
    st.caption(lesson.survival_note(with_res, without))
    fig = cached("norm_res_loss", (key,), lambda: loss_chart(
        [dict(name="with the residual", y=with_res.losses, color=COLORS[True]),
         dict(name="without it", y=without.losses, color=COLORS[False])], title="Training loss, same seed and data"))
    chart.show(fig, key="norm_res_loss", name="residual_loss")
    show_check(lesson.residual_loss_claim(with_res, without, steps))


# -- 4. pre- vs post-norm × warm-up -------------------------------------------------------------------------------
def _placement_settings() -> tuple[int, int, str]:
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        steps = _steps_widget("place")
    layers = c2.selectbox("Blocks", (2, 6, 12), index=1, key="norm_place_layers", **share.URL)
    init = c3.radio("Initialisation", lesson.INITS, index=lesson.INITS.index("xavier"), key="norm_place_init",
                    **share.URL,
                    format_func={"xavier": "Xavier (2017, Xiong et al.)", "model": "the model's N(0, 0.02)"}.get)
    return steps, int(layers), init


@section("the pre/post-norm view")
def placement_view() -> None:
    steps, layers, init = _placement_settings()
    warm = max(1, steps // 3)
    key = input_key("placement", steps, layers, init, warm, LR)
    found = run_once("place", key, "Train the four setups", f"Four {layers}-block models × {steps} steps.",
                     lambda progress: lesson.norm_placement(word_tokenizer(), n_layers=layers, steps=steps,
                                                            warmup_steps=warm, init=init, lr=LR, progress=progress))
    train_link()
    if found is None:
        return
    runs, wall = found
    st.caption(f"Trained on this server's CPU in {wall:.1f} s: tiny preset (d_model {runs[0].config.d_model}), "
               f"{layers} blocks, {init} initialisation, same seed and batches; warm-up: the learning rate rises "
               f"linearly to {LR:g} over the first {warm} steps.")
    style = {(p, w): dict(color=COLORS[p], dash="solid" if w else "dash")
             for p in ("pre", "post") for w in (True, False)}
    fig = cached("norm_place_loss", (key,), lambda: loss_chart(
        [dict(name=r.label, y=r.losses, **style[(r.config.norm_position, not r.label.endswith(" 0"))]) for r in runs],
        title="Training loss: pre- vs post-norm, with and without warm-up"))
    chart.show(fig, key="norm_place_loss", name="norm_placement_loss")
    st.table(pd.DataFrame(lesson.placement_rows(runs)).set_index("setup"))
    st.caption(f"Loss at the end: {lesson.tail_words(len(runs[0].losses))}.")
    pre, post = runs[0], runs[2]  # the gradients at initialisation do not depend on the warm-up
    views = (("grads", pre.gradients.params, post.gradients.params, "‖∂L/∂θ‖", True,
              "Gradient of each block's parameters, at init"),
             ("stream", pre.stream.norms, post.stream.norms, "mean ‖x‖ per token", False,
              "The residual stream's size after each block, at init"))
    for col, (what, a, b, y_title, log, title) in zip(st.columns(2), views):
        fig = cached("norm_place_layers", (key, what), lambda a=a, b=b, y=y_title, lg=log, t=title: per_layer_chart(
            [dict(name="pre-norm", y=a, color=COLORS["pre"]), dict(name="post-norm", y=b, color=COLORS["post"])],
            y_title=y, log_y=lg, title=t))
        chart.show(fig, key=f"norm_place_{what}", name=f"norm_placement_{what}", container=col)
    claims = lesson.placement_claims(runs)
    show_checks(claims)
    summary = lesson.placement_summary(claims)  # where the measurement does not back a claim: which, and why
    if summary:
        st.info(summary)
    else:
        st.success(lesson.ALL_CLAIMS_HOLD)
    st.markdown(lesson.final_norm_note(pre, post))


def train_link() -> None:
    if not (ROOT / TRAIN_PAGE).exists():
        return
    try:
        st.page_link(TRAIN_PAGE, label="Train page → Compare setups → pre/post-norm × warm-up (any size, live)",
                     icon=":material/model_training:", query_params={"tab": "Compare setups"})
    except StreamlitAPIException:  # the file exists but the page is not registered in app.py
        st.caption("The Train page runs the same comparison at a larger size (Compare setups).")


# -- 5. the batch dimension ---------------------------------------------------------------------------------------
@section("the batch view")
def batch_view(ckpt: Checkpoint, enc: Encoded) -> None:
    cfg = ckpt.model.config
    others = [s for s in LECTURE_SENTENCES if s != st.session_state.get("norm_text")]
    share.valid("norm_other", others, others[min(5, len(others) - 1)])
    other = st.selectbox("Sample 2", others, index=min(5, len(others) - 1), key="norm_other", **share.URL)
    ids, tokens = lesson.batch_ids(ckpt.tokenizer, enc, other, cfg.pad_id, min(MAX_BATCH_T, cfg.max_len),
                                   uses_bos(ckpt))
    f = cached("norm_batch", (input_key(model_id(ckpt), ids),),  # every layer's weights, (L, N, H, T, T)
               lambda: lesson.batch_facts(ckpt.model, tuple(map(tuple, ids))), model_pass=True)
    st.markdown(lesson.shapes_note(f))
    show_check(lesson.mask_claim(f, cfg.causal))
    layer, head = layer_head("norm_batch", cfg.n_layers, cfg.n_heads, where=st.columns(2))
    fig = sample_matrices(f["probs"][layer, :, head], tokens, ["sample 1", "sample 2"],
                          title=f"Each sample its own T×T matrix (layer {layer}, head {head})")
    chart.show(fig, key="norm_batch_matrices", name=f"batch_matrices_L{layer}_H{head}")
    show_check(lesson.independence_claim(f))
    if cfg.norm == "batchnorm":
        st.caption(lesson.BATCHNORM_MODEL)
    st.markdown(lesson.LOSS_TERMS)
    st.dataframe(pd.DataFrame(lesson.loss_columns(f, tokens), index=["sample 1", "sample 2"]), width="stretch")
    show_check(lesson.loss_claim(f))
