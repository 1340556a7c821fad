"""Streamlit glue for the Normalization page: the axes of LayerNorm/BatchNorm/RMSNorm, the four reasons, residual
connections, pre- vs post-norm × warm-up, and the batch dimension on the sidebar's model."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import torch
from streamlit.errors import StreamlitAPIException

from viz_model.checkpoint import Checkpoint
from viz_model.config import NORMS
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
from viz_model.tokenizer import PAD, Encoded, encode, load_tokenizer
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, input_key, model_id, shared_results
from viz_model.ui.errors import section
from viz_model.ui.widgets import check_line, layer_head, uses_bos, verdict

ROOT = Path(__file__).resolve().parents[2]
TRAIN_PAGE = "app_pages/train.py"
STEPS = (10, 30, 60, 120)         # training steps a student may pick for the short runs
MAX_STORED = 16                   # finished runs kept per server (one per setting)
MEAN_TOL, VAR_TOL = 1e-5, 1e-5    # float32 rounding of a mean / variance over a handful of numbers
FLAT_FACTOR = 2.0                 # "about the same at every depth": within this factor from block L to block 1
VANISH_FACTOR = 0.1               # "vanishes toward the input": block 1 gets under a tenth of block L's gradient
WARM_TOL = 0.1                    # nats: pre-norm without warm-up "trains fine" if within this of with warm-up
MAX_BATCH_T = 12                  # tokens per sample in the batch view (two heatmaps and a loss table stay readable)
WARMUP_BATCHES = 5                # training batches that fill BatchNorm's running statistics
LR = 1e-2                         # the short runs' learning rate (AdamW)
# Okabe–Ito (figures.common.COLORWAY): Tableau green beside red was ΔE00 4.6 apart under deuteranopia (#29)
COLORS = {"pre": COLORWAY[0], "post": COLORWAY[1], True: COLORWAY[2], False: COLORWAY[3]}


def num(v: float) -> str:
    """A measured difference: an exact zero says so; anything else in three significant digits."""
    return "0.0 (exactly)" if v == 0.0 else f"{v:#.3g}"


# -- the random batch of the first two views ----------------------------------------------------------------------
def random_batch() -> torch.Tensor:
    """A seeded random (N, T, d_model) batch, features on different scales, from widgets bound to the URL."""
    c1, c2, c3, c4 = st.columns(4)
    N = c1.select_slider("Samples N", (2, 3, 4), value=3, key="norm_N", **share.URL)
    T = c2.select_slider("Positions T", tuple(range(2, 7)), value=4, key="norm_T", **share.URL)
    d = c3.select_slider("Features d_model", (4, 6, 8, 12, 16), value=8, key="norm_d", **share.URL)
    seed = c4.number_input("Random seed", 0, 9999, 0, key="norm_seed", **share.URL,
                           help="Another seed draws another batch.")
    gen = torch.Generator().manual_seed(int(seed))
    scale = torch.linspace(0.5, 3.0, int(d))                                  # (d,) features on different scales
    x = torch.randn(int(N), int(T), int(d), generator=gen) * scale + 1.0      # (N, T, d)
    st.caption(f"A random batch shaped (N, T, d_model) = {tuple(x.shape)}: features drawn with standard deviations "
               "from 0.5 to 3 and mean 1, so normalising changes something you can see.")
    return x


# -- 1. which axis -------------------------------------------------------------------------------------------------
def _group_stats(s: lesson.NormStats) -> dict[str, np.ndarray]:
    if s.kind == "batchnorm":
        return {"mean": s.feature_mean.numpy(), "variance": s.feature_var.numpy()}
    stats = {"mean": s.token_mean.numpy(), "variance": s.token_var.numpy()}
    return {**stats, "RMS": s.token_rms.numpy()} if s.kind == "rmsnorm" else stats


def _span(t: torch.Tensor) -> str:
    return f"{float(t.min()):.6f} … {float(t.max()):.6f}"


def stats_table(stats: dict[str, lesson.NormStats]) -> pd.DataFrame:
    rows = [{"norm": KIND_NAMES[k], "normalises": s.axes,
             "token mean, max |·|": f"{float(s.token_mean.abs().max()):.1e}",
             "token variance": _span(s.token_var), "token RMS": _span(s.token_rms),
             "feature mean, max |·|": f"{float(s.feature_mean.abs().max()):.1e}",
             "feature variance": _span(s.feature_var)} for k, s in stats.items()]
    return pd.DataFrame(rows).set_index("norm")


@section("the axes view")
def axes_view() -> None:
    x = random_batch()
    # One batch for a whole class (the same seed and shape): its norms and figures are computed once per server.
    stats, figures, table, tight = cached("norm_axes", (input_key(x.numpy().tobytes()),), lambda: _axes(x))
    for col, (kind, s) in zip(st.columns(3), stats.items()):
        col.markdown(f"**{KIND_NAMES[kind]}**: {s.axes}")
        chart.show(figures[kind], key=f"norm_groups_{kind}", name=f"norm_groups_{kind}", container=col)
    st.caption("Rows are tokens (s2·t1 = sample 2, position 1), columns are features; colour is the normalised value "
               "(red positive, blue negative; hover for numbers). Each outlined box is one group of cells that share a "
               "mean and a variance, the first one in orange: LayerNorm and RMSNorm a row, BatchNorm a whole column "
               "across every sample (dotted lines separate the samples).")
    st.table(table)
    claims(stats, tight)


def _axes(x: torch.Tensor) -> tuple[dict[str, lesson.NormStats], dict, pd.DataFrame, lesson.NormStats]:
    """Each norm of the batch x (N, T, d), its figure, the statistics table, and LayerNorm with ε = 1e-12 (read-only,
    shared)."""
    stats = {k: lesson.normalize(x, k) for k in NORMS}
    figures = {k: norm_groups(s.output, s.kind, _group_stats(s), title=f"{KIND_NAMES[s.kind]} output")
               for k, s in stats.items()}
    return stats, figures, stats_table(stats), lesson.normalize(x, "layernorm", eps=1e-12)


def claims(stats: dict[str, lesson.NormStats], tight: lesson.NormStats) -> None:
    """The measured claims of the axes view; tight: LayerNorm of the same batch with ε = 1e-12."""
    ln, bn, rms = stats["layernorm"], stats["batchnorm"], stats["rmsnorm"]
    verdict(float(ln.token_mean.abs().max()), MEAN_TOL, "LayerNorm: every token's mean over its features is 0")
    verdict(float((ln.token_var - ln.expected_var).abs().max()), VAR_TOL,
            "LayerNorm: every token's variance is σ²/(σ² + ε), σ² its variance before the norm")
    st.caption(f"So the variance is not exactly 1: with torch's default ε = 1e-5 it is as low as "
               f"1 − {1 - float(ln.token_var.min()):.1e} here; with ε = 1e-12 it is 1 to within "
               f"{float((tight.token_var - 1).abs().max()):.1e}. ε only keeps the division safe for a constant token.")
    verdict(float(bn.feature_mean.abs().max()), MEAN_TOL, "BatchNorm: every feature's mean over all N×T tokens is 0")
    check_line(float(bn.token_mean.abs().max()) > 10 * MEAN_TOL,
               f"… but BatchNorm leaves each token's own mean alone (up to {float(bn.token_mean.abs().max()):.2f}): "
               "it normalises across the batch, not within a token.")
    verdict(float((rms.token_rms - rms.token_rms.new_tensor(1.0)).abs().max()), 1e-4,
            "RMSNorm: every token's root mean square is 1 (ε aside)")
    check_line(float(rms.token_mean.abs().min()) > 10 * MEAN_TOL,
               f"… and RMSNorm keeps the token's mean (between {float(rms.token_mean.min()):.2f} and "
               f"{float(rms.token_mean.max()):.2f}): no mean subtraction, one statistic fewer (Llama uses it).")


# -- 2. the four reasons -------------------------------------------------------------------------------------------
def reasons_table(pad: lesson.PaddingEffect, one: lesson.BatchOfOne, gen: lesson.OneTokenAtATime,
                  te: lesson.TrainEval) -> pd.DataFrame:
    bn_one_ok = bool(one.error) and bool(torch.isfinite(one.layernorm_one).all())
    rows = [
        ("padding in another sample", f"max |Δ| of sample 1's output when {pad.n_pad} of sample 2's positions "
         "become padding", num(pad.sample1_change["layernorm"]), num(pad.sample1_change["rmsnorm"]),
         num(pad.sample1_change["batchnorm"]),
         pad.sample1_change["layernorm"] == 0.0 == pad.sample1_change["rmsnorm"] < pad.sample1_change["batchnorm"]),
        ("batch of one", "normalise a single token in training mode", "works", "—",
         "torch raises an error" if one.error else "no error", bn_one_ok),
        ("one token at a time", "max |norm(token alone) − norm(token in its sequence)|", num(gen.layernorm_change),
         "—", f"training mode: {'error' if gen.batchnorm_train_error else 'no error'}; eval mode (running "
         f"statistics) differs by {num(gen.batchnorm_eval_change)}",
         gen.layernorm_change == 0.0 and bool(gen.batchnorm_train_error) and gen.batchnorm_eval_change > 0),
        ("train vs eval", "max |train-mode output − eval-mode output| for the same input", num(te.change["layernorm"]),
         num(te.change["rmsnorm"]), num(te.change["batchnorm"]),
         te.change["layernorm"] == 0.0 == te.change["rmsnorm"] < te.change["batchnorm"]),
    ]
    table = [{"reason": r, "measured": m, "LayerNorm": a, "RMSNorm": b, "BatchNorm": c,
              "per-token norms win?": "✓" if ok else "✗"} for r, m, a, b, c, ok in rows]
    return pd.DataFrame(table).set_index("reason")


@section("the four reasons")
def reasons_view() -> None:
    x = random_batch()
    T = x.shape[1]
    share.valid("norm_pad", range(1, T + 1), T)
    n_pad = st.slider("Padding positions at the end of sample 2", 1, T, min(2, T), key="norm_pad", **share.URL,
                      help="These positions of sample 2 are replaced by the zero vector, as a <pad> embedding.")
    pad, one = lesson.padding_effect(x, n_pad), lesson.batch_of_one(x)
    gen, te = lesson.one_token_at_a_time(x, WARMUP_BATCHES), lesson.train_vs_eval(x, WARMUP_BATCHES)
    st.table(reasons_table(pad, one, gen, te))
    st.header("1 · Padding in another sample")
    ch = pad.sample1_change
    check_line(ch["layernorm"] == 0.0 < ch["batchnorm"],
               f"Sample 1 is untouched, yet BatchNorm changes its output by up to {num(ch['batchnorm'])} because the "
               f"padding moved the batch statistics; LayerNorm's change is {num(ch['layernorm'])} and RMSNorm's "
               f"{num(ch['rmsnorm'])}.")
    fig = cached("norm_padding", (input_key(x.numpy().tobytes()), n_pad), lambda: padding_bars(
        pad.bn_mean[0], pad.bn_mean[1], pad.bn_var[0], pad.bn_var[1], n_pad=n_pad,
        title="BatchNorm's statistics, with and without padding in sample 2"))
    chart.show(fig, key="norm_padding_chart", name="batchnorm_padding")
    reasons_details(one, gen, te)


def reasons_details(one: lesson.BatchOfOne, gen: lesson.OneTokenAtATime, te: lesson.TrainEval) -> None:
    st.header("2 · A batch of one")
    st.markdown("BatchNorm in training mode on a single token (N × T = 1) — torch's own answer:")
    st.code(one.error or "(no error)", language=None)
    dev = float((one.two_tokens.abs() - 1).abs().max())
    check_line(bool(one.error) and dev < 1e-2,
               f"With two tokens it runs but is degenerate: every output is −1 or +1 (max ||y| − 1| = {dev:.1e}), "
               "whatever the tokens were. LayerNorm normalises the single token normally.")
    st.header("3 · Generation, one token at a time")
    check_line(gen.layernorm_change == 0.0,
               f"LayerNorm of each token alone equals LayerNorm inside the whole sequence: difference "
               f"{num(gen.layernorm_change)}. It needs nothing but the token itself.")
    st.markdown("BatchNorm (training mode) on the one new token:")
    st.code(gen.batchnorm_train_error or "(no error)", language=None)
    st.caption(f"In eval mode BatchNorm falls back on running statistics from earlier training batches: the new "
               f"token's output then differs by {num(gen.batchnorm_eval_change)} from the one it gets with this "
               "sequence's own statistics.")
    st.header("4 · Train vs eval")
    check_line(te.change["layernorm"] == 0.0 < te.change["batchnorm"],
               f"After {WARMUP_BATCHES} training batches, the same input in train() and eval() mode: BatchNorm's "
               f"outputs differ by up to {num(te.change['batchnorm'])} (batch statistics vs running ones: running "
               f"mean up to {float(te.running_mean.abs().max()):.2f}); LayerNorm {num(te.change['layernorm'])}, "
               f"RMSNorm {num(te.change['rmsnorm'])}: they have no running statistics.")


# -- the short training runs: behind a button, kept per setting for every user --------------------------------------
@st.cache_resource(show_spinner=False)
def word_tokenizer():
    return load_tokenizer("word")


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


def tail_words(steps: int) -> str:
    k = max(1, steps // 6)
    return "the last step's loss" if k == 1 else f"mean of the last {k} steps"


def tail(losses: list[float]) -> float:
    """The loss at the end of a run: the mean of its last sixth (a single step's loss is noisy)."""
    k = max(1, len(losses) // 6)
    return float(np.mean(losses[-k:]))


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
    residual_checks(with_res, without, steps)
    fig = cached("norm_res_loss", (key,), lambda: loss_chart(
        [dict(name="with the residual", y=with_res.losses, color=COLORS[True]),
         dict(name="without it", y=without.losses, color=COLORS[False])], title="Training loss, same seed and data"))
    chart.show(fig, key="norm_res_loss", name="residual_loss")
    a, b = tail(with_res.losses), tail(without.losses)
    check_line(a < b, f"After {steps} steps: loss {a:.3f} with the residual, {b:.3f} without ({tail_words(steps)}).")


def residual_checks(with_res: lesson.Run, without: lesson.Run, steps: int) -> None:
    g, h = with_res.gradients.stream, without.gradients.stream
    flat, vanish = max(g) / min(g), h[0] / h[-1]
    check_line(flat < FLAT_FACTOR, f"With the residual the gradient reaching each block is about the same at every "
                                   f"depth (largest / smallest = {flat:.2f}): each factor is I + ∂F/∂x.")
    check_line(vanish < VANISH_FACTOR, f"Without it, block 1 gets {vanish:.2g} of the gradient block 12 gets "
                                       f"({1 / vanish:.0f}× less): a product of 12 factors ∂F/∂x alone.")
    st.caption(f"What survives 12 blocks of the input (mean cosine of the last block's output with the embeddings): "
               f"{with_res.stream.input_cosine[-1]:.2f} with the residual, {without.stream.input_cosine[-1]:.2f} "
               "without.")


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
    placement_table(runs)
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
    placement_claims(runs)
    final_norm_note(pre, post)


def placement_table(runs: list[lesson.Run]) -> None:
    rows = [{"setup": r.label, "loss at the start": f"{r.losses[0]:.3f}", "loss at the end": f"{tail(r.losses):.3f}",
             "diverged": "yes" if r.diverged else "no"} for r in runs]
    best = min(range(len(runs)), key=lambda i: tail(runs[i].losses))
    rows[best]["setup"] += " (lowest)"
    st.table(pd.DataFrame(rows).set_index("setup"))
    st.caption(f"Loss at the end: {tail_words(len(runs[0].losses))}.")


def placement_claims(runs: list[lesson.Run]) -> None:
    """The lecture's claims as measured rows; where the measurement does not back one, say so and why."""
    pre_w, pre_0, post_w, post_0 = (tail(r.losses) for r in runs)
    post_g, pre_g = runs[2].gradients.params, runs[0].gradients.params
    rows = [(post_0 > post_w or runs[3].diverged, "post-norm needs warm-up",
             f"Post-norm needs warm-up: without it, its loss ends at {post_0:.3f}, with it at {post_w:.3f}."),
            (pre_0 <= pre_w + WARM_TOL, "pre-norm does not",
             f"Pre-norm trains without warm-up: {pre_0:.3f} without, {pre_w:.3f} with (tolerance {WARM_TOL} nats)."),
            (pre_0 < post_0, "pre-norm beats post-norm without warm-up",
             f"Without warm-up, pre-norm ends below post-norm: {pre_0:.3f} vs {post_0:.3f}."),
            (post_g[-1] > post_g[0], "post-norm's gradients grow toward the output",
             f"At initialisation post-norm's gradients grow toward the output: block {len(post_g)} gets "
             f"{post_g[-1] / post_g[0]:.2f}× block 1's."),
            (max(pre_g) / min(pre_g) < FLAT_FACTOR, "pre-norm's are flat",
             f"Pre-norm's are about the same at every depth: largest / smallest = {max(pre_g) / min(pre_g):.2f}.")]
    for ok, _, text in rows:
        check_line(ok, text)
    missed = [name for ok, name, _ in rows if not ok]
    if missed:
        st.info(f"On this small model the measurement backs {len(rows) - len(missed)} of the {len(rows)} claims; "
                f"not here: {'; '.join(missed)}. So it does not back the lecture's story as a whole, and that is "
                "worth saying plainly. The claim comes from Xiong et al. "
                "(2020), *On Layer Normalization in the Transformer Architecture*: at initialisation a post-norm "
                "model's gradients near the output do not shrink with the depth L, while pre-norm's scale like "
                "1/√L, so a post-norm model takes large first steps and needs warm-up to survive them. That is a "
                "statement about deep, wide models trained long (their runs: 6- and 12-layer models with "
                "d_model 512–768). Here a few blocks of width 32 for a few dozen steps leave that factor small, "
                "and the initialisation, learning rate and data order move the curves as much. Try 12 blocks, or "
                "the Train page's comparison at a size you choose.")
    else:
        st.success("On this model every claim holds as measured.")


def final_norm_note(pre: lesson.Run, post: lesson.Run) -> None:
    d = pre.config.d_model
    st.markdown(f"**Why the final LayerNorm exists only in pre-norm.** Pre-norm adds F(LN(x)) to x and never "
                f"normalises x itself, so the stream's size is whatever the blocks added up to (measured at "
                f"initialisation: {pre.stream.norms[0]:.2f} after block 1, {pre.stream.norms[-1]:.2f} after block "
                f"{len(pre.stream.norms)}); `ln_f` normalises it once before the output head. Post-norm ends every "
                f"block with a LayerNorm, so its stream is already normalised ({post.stream.norms[-1]:.2f} ≈ "
                f"√d_model = {math.sqrt(d):.2f}); another LayerNorm would change nothing, and the model has none. "
                "The price of that: post-norm normalises the bypass too, so the residual path is no longer the "
                "untouched identity that pre-norm keeps.")


def train_link() -> None:
    if not (ROOT / TRAIN_PAGE).exists():
        return
    try:
        st.page_link(TRAIN_PAGE, label="Train page → Compare setups → pre/post-norm × warm-up (any size, live)",
                     icon=":material/model_training:", query_params={"tab": "Compare setups"})
    except StreamlitAPIException:  # the file exists but the page is not registered in app.py
        st.caption("The Train page runs the same comparison at a larger size (Compare setups).")


# -- 5. the batch dimension ---------------------------------------------------------------------------------------
def batch_ids(ckpt: Checkpoint, enc: Encoded, other: str) -> tuple[list[list[int]], list[list[str]]]:
    """Sample 1 = the typed sentence, sample 2 = a lecture sentence; the shorter one padded at the end."""
    pad = ckpt.model.config.pad_id
    second = encode(ckpt.tokenizer, other, max_len=min(MAX_BATCH_T, ckpt.model.config.max_len), bos=uses_bos(ckpt))
    T = max(len(enc.ids), len(second.ids))
    rows, tokens = [], []
    for e in (enc, second):
        rows.append([*e.ids, *[pad] * (T - len(e.ids))])
        tokens.append([*e.tokens, *[PAD] * (T - len(e.ids))])
    return rows, tokens


@st.cache_data(max_entries=32, show_spinner=False)
def batch_facts(_model, key: str, ids: tuple[tuple[int, ...], ...]) -> dict:
    """The lesson's measurements and one traced pass of the batch (every layer's weights, (L, N, H, T, T))."""
    r = lesson.batch_independence(_model, torch.tensor(ids))
    probs = lesson.batch_attention(_model, torch.tensor(ids)).numpy()  # (L, N, H, T, T)
    return dict(shapes=r.shapes, mask_shape=r.mask_shape, change=r.sample1_change, mean=r.mean_loss,
                model_loss=r.model_loss, diff=r.loss_difference, losses=r.token_losses.cpu().numpy(),
                scored=r.scored.cpu().numpy(), probs=probs)


@section("the batch view")
def batch_view(ckpt: Checkpoint, enc: Encoded) -> None:
    cfg = ckpt.model.config
    others = [s for s in LECTURE_SENTENCES if s != st.session_state.get("norm_text")]
    share.valid("norm_other", others, others[min(5, len(others) - 1)])
    other = st.selectbox("Sample 2", others, index=min(5, len(others) - 1), key="norm_other", **share.URL)
    ids, tokens = batch_ids(ckpt, enc, other)
    f = batch_facts(ckpt.model, input_key(model_id(ckpt), ids), tuple(map(tuple, ids)))
    N, H, T, d_k = f["shapes"]["q"]
    st.markdown(f"Working shapes in layer 0 of the sidebar's model, from a live trace: q, k, v are "
                f"**(N, H, T, d_k) = {f['shapes']['q']}**, the attention weights **(N, H, T, T) = "
                f"{f['shapes']['probs']}**: N·H = {N * H} separate T×T matrices.")
    mask = f["mask_shape"]
    check_line(math.prod(mask[:-2]) == 1, f"The {'causal ' if cfg.causal else ''}mask is one {mask} tensor, "
                                          f"broadcast over N = {N} and H = {H}: every sample gets the same rule.")
    layer, head = layer_head("norm_batch", cfg.n_layers, cfg.n_heads, where=st.columns(2))
    fig = sample_matrices(f["probs"][layer, :, head], tokens, ["sample 1", "sample 2"],
                          title=f"Each sample its own T×T matrix (layer {layer}, head {head})")
    chart.show(fig, key="norm_batch_matrices", name=f"batch_matrices_L{layer}_H{head}")
    check_line(f["change"] == 0.0, f"Replacing every token of sample 2 by random ids changes sample 1's logits by "
                                   f"{num(f['change'])}: the samples of a batch never meet.")
    if cfg.norm == "batchnorm":
        st.caption("This model uses BatchNorm: in training mode it would take statistics over the batch, and then "
                   "the samples do meet. The check above runs in eval mode (running statistics).")
    loss_table(f, tokens)


def loss_table(f: dict, tokens: list[list[str]]) -> None:
    losses, scored = f["losses"], f["scored"]
    T = losses.shape[1]
    cols = {f"{t}→{t + 1}": [f"{losses[n, t]:.3f} ({tokens[n][t + 1]})" if scored[n, t] else "—"
                             for n in range(len(tokens))] for t in range(T - 1)}
    st.markdown("**The loss, term by term**: each cell is one position's cross-entropy for predicting the next "
                "token, named in brackets (— where the target is `<pad>`: not scored). The `<pad>` positions only "
                "read earlier tokens (causal mask), so they change nothing for the real ones.")
    st.dataframe(pd.DataFrame(cols, index=["sample 1", "sample 2"]), width="stretch")
    verdict(f["diff"], 1e-5, f"The mean of the {int(scored.sum())} scored terms, {f['mean']:.4f}, is the model's "
                             f"loss on the batch, {f['model_loss']:.4f}")
