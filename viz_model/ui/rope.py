"""Sections of the RoPE page; each computes live via viz_model.lessons.rope and shows its checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from viz_model import rope
from viz_model.figures import rope as rfigs
from viz_model.figures.attention import attention_heatmap
from viz_model.lecture import ROPE_SENTENCE
from viz_model.lessons import rope as lesson
from viz_model.lessons.common import decimate
from viz_model.model_text import is_folder_model
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY, model_with
from viz_model.ui.widgets import answer_line, encode_text, show_check, show_checks

PARAM_KEYS = {"beta_fast": "rope_ext_bf", "beta_slow": "rope_ext_bs", "low_freq_factor": "rope_ext_lo",
              "high_freq_factor": "rope_ext_hi"}  # the shared links' names; a new panel parameter gets rope_ext_NAME
EXTRA_PARAMS = tuple((name, p.panel_top, p.default, PARAM_KEYS.get(name, f"rope_ext_{name}"))
                     for name, p in rope.panel_params().items())  # the scalings' rows that the panel offers
EXT_KEYS = {"d_k": "rope_ext_dk", "base": "rope_ext_base", "L": "rope_ext_L", "Lp": "rope_ext_Lp",
            "method": "rope_ext_method", **{name: key for name, *_, key in EXTRA_PARAMS}}  # YaRN's and Llama 3's
HELP = {"angle from q to k in this pair": "(s − t)·θ_i, wrapped to (−180°, 180°]"}
EXT_SEEDED = "rope_ext_seeded"  # which model's settings the context-extension panel was last seeded with


def on_off(ckpt, ids) -> tuple:
    """Traces with RoPE on and off for one (read-only, shared) model and sentence."""
    return cached("rope_on_off", (input_key(model_id(ckpt), tuple(ids)),),
                  lambda: lesson.rope_on_off(ckpt.model, tuple(ids)), model_pass=True)


def rope_model():
    ckpt, where = model_with("rope", ("classroom", "enc-rope"))
    if ckpt is None:
        st.info(lesson.NO_ROPE_MODEL)
    return ckpt, where


# -- worked example -------------------------------------------------------------------------------------
@section("the worked example")
def worked_example() -> None:
    st.markdown(lesson.WORKED_INTRO)
    edited = st.data_editor(lesson.q_frame(), key="rope_q_editor", num_rows="fixed")
    ex = lesson.worked_example(lesson.parse_matrix(edited.to_numpy(dtype=float, na_value=np.nan), (3, 8)))
    tables = lesson.worked_tables(ex, edited.index)
    for h, col in enumerate(st.columns(2)):
        col.markdown(lesson.head_columns(h))
        col.dataframe(tables[f"head {h}"], key=f"rope_head{h}")
    st.markdown(lesson.omega_sentence(ex))
    a1, a2 = st.columns([1, 2])
    a1.dataframe(tables["angles"], key="rope_angles_ex")
    a2.dataframe(tables["rotated"], key="rope_rotated_ex")
    a2.caption(lesson.HEAD0_ROTATED)
    show(rfigs.pair_arrows(lesson.worked_arrows(ex, edited.index), lesson.WORKED_ARROWS), key="rope_worked_fig",
         name="rope_worked_rotation")  # also loads the chart library while the tables are read (Pair rotation, #43)
    show_check(lesson.worked_claim(ex))


# -- pair rotation --------------------------------------------------------------------------------------
@section("the pair rotation")
def pair_rotation(d_k: int, base: float) -> None:
    c = st.columns(4)
    share.valid("rope_pair", range(d_k // 2), 0)  # d_k follows the sidebar model
    pair = c[0].slider("pair i", 0, d_k // 2 - 1, 0, key="rope_pair", **share.URL)
    t = c[1].slider("query position t", 0, 64, 3, key="rope_t", **share.URL)
    s = c[2].slider("key position s", 0, 64, 5, key="rope_s", **share.URL)
    shift = c[3].slider("shift both by", 0, 1000, 0, key="rope_shift", **share.URL)
    now, check = lesson.pair_shift(d_k, base, pair, t, s, shift)
    left, right = st.columns([3, 2])
    show(rfigs.pair_arrows(now["arrows"], f"Pair {pair}: θ_{pair} = {now['theta']:.4g} rad per position"),
         key="rope_pair_fig", name="rope_pair_rotation", container=left)
    for label, value in lesson.pair_scores(now).items():
        right.metric(label, value, help=HELP.get(label))
    left.caption(lesson.SHIFT_BOTH)
    with right:
        show_check(check)


# -- angles and wavelengths -----------------------------------------------------------------------------
@section("the angle table")
def angles_and_wavelengths(d_k: int, base: float) -> None:
    ctx = st.slider("context length (positions)", 16, 8192, 512, step=16, key="rope_ctx", **share.URL)
    angles, wl = lesson.angle_view(d_k, base, ctx)
    left, right = st.columns(2)
    show(rfigs.angle_heatmap(angles, decimate(ctx, 256), f"t·θ_i mod 2π, t < {ctx:,}"),
         key="rope_angle_table", name="rope_angle_table", container=left)
    show(rfigs.wavelength_bars(wl, ctx, "Wavelength of each pair"), key="rope_wavelengths", name="rope_wavelengths",
         container=right)
    st.caption(lesson.wrap_sentence(wl, ctx))


# -- relative invariance --------------------------------------------------------------------------------
@section("the relative scores")
def relative_scores(d_k: int, base: float) -> None:
    scores, check = lesson.near_far(d_k, base)
    for col, (label, value) in zip(st.columns(2), scores.items()):
        col.metric(label, value)
    show_check(check)
    max_dist = st.slider("largest distance Δ", 16, 1024, 128, step=16, key="rope_maxdist", **share.URL)
    curves = lesson.random_distance_curves(d_k, base, max_dist)
    show(rfigs.scores_vs_distance(curves, "Score against relative distance (random vectors)"),
         key="rope_dist_random", name="rope_scores_random")
    ckpt, where = rope_model()
    if ckpt is None:
        return
    _, off = on_off(ckpt, encode_text(ckpt, ROPE_SENTENCE, max_len=ckpt.model.config.max_len).ids)
    heads = lesson.head_distance_curves(ckpt.model.config, off)
    title = f"Layer 0 of {where}: mean q·k of “{ROPE_SENTENCE}” moved to distance Δ"
    show(rfigs.scores_vs_distance(heads, title, "mean score"), key="rope_dist_model", name="rope_scores_model")


# -- base and context extension -------------------------------------------------------------------------
@section("the context extension panel")
def context_extension(d: dict, ckpt=None) -> None:
    """d: lessons.rope.panel_defaults. ckpt: the sidebar's RoPE model folder, whose own theta, scaling and lengths the
    panel opens on instead (and checks against its own frequencies); None for the app's own models."""
    own = lesson.model_extension(ckpt.model.config) if ckpt is not None else None
    lesson.seed_panel(st.session_state, own, str(ckpt.path) if ckpt is not None else "", EXT_KEYS, EXT_SEEDED)
    if own is not None:
        st.caption(lesson.own_settings_sentence(ckpt.model.config))
    c = st.columns(4)
    d_ks, bases = lesson.panel_choices(own)
    d_k = c[0].select_slider("d_k", d_ks, value=d["d_k"], key="rope_ext_dk", **share.URL)
    base = c[1].select_slider("base", bases, value=d["base"], key="rope_ext_base", **share.URL,
                              format_func=lambda b: f"{b:,.0f}")
    L = c[2].number_input("training length L", 16, lesson.L_MAX, d["L"], step=16, key="rope_ext_L", **share.URL)
    Lp = c[3].number_input("target length L′", 16, lesson.LP_MAX, d["Lp"], step=16, key="rope_ext_Lp", **share.URL)
    methods = list(rope.SCALINGS)
    method = st.radio("method", methods, format_func=lambda m: rope.SCALINGS[m].label, horizontal=True,
                      key="rope_ext_method", **share.URL, index=methods.index("ntk"))
    with st.expander("YaRN and Llama 3 parameters"):
        extra = {name: col.number_input(name, 0.0, top, value, key=key, **share.URL)
                 for col, (name, top, value, key) in zip(st.columns(4), EXTRA_PARAMS)}
    _extension_views(d_k, base, int(L), int(Lp), method, extra, ckpt)


def _extension_views(d_k: int, base: float, L: int, Lp: int, method: str, extra: dict, ckpt) -> None:
    labels = rope.scaling_labels()
    if short := lesson.short_target(L, Lp):
        st.warning(short)
        return
    table, problems = lesson.scaling_table(d_k, base, L, Lp, extra), lesson.scaling_problems(L, Lp, extra)
    for bad, why in problems.items():  # one bad method's parameters hide no other method
        st.warning(f"{labels[bad]} cannot run with these parameters: {why}")
    left, right = st.columns(2)
    show(rfigs.frequency_ratios({m: r for m, (r, _) in table.items()}, labels, method if method in table else "none",
                                f"θ′/θ per pair, s = L′/L = {Lp / L:g}"),
         key="rope_ratios", name="rope_scaling_ratios", container=left)
    if method not in table:
        return
    ratio, att = table[method]
    seen, needed, coverage = lesson.coverage_view(d_k, base, method, ratio, att, L, Lp)
    show(rfigs.angle_coverage(seen, needed, f"{labels[method]}: angles at L′ vs training"),
         key="rope_coverage", name="rope_angle_coverage", container=right)
    answer_line("rope_coverage_text", coverage, st.caption)  # #39: hidden in class until Reveal
    st.dataframe(pd.Series(lesson.readouts(d_k, base, Lp / L, L, Lp), name="value"), key="rope_readouts")
    if ckpt is not None:  # ✓ the panel's method gives the model's own frequencies, while it holds its settings
        settings = dict(d_k=d_k, base=base, L=L, Lp=Lp, method=method, **extra)
        own = lesson.own_claim(ckpt.model.config, settings, ratio, att)
        if own is None:
            st.caption(lesson.NOT_OWN_SETTINGS)
        else:
            show_check(own)
    st.info(lesson.ntk_note())


# -- length experiment ----------------------------------------------------------------------------------
def _file_cell(key: str, multiple: int) -> pd.DataFrame:
    """Held-out losses of one model at one length, every method (per loaded model: a changed file is a new one)."""
    ckpt = load_model(key, st.session_state.get(DEVICE_KEY, "auto"))
    return cached("rope_length_cell", (model_id(ckpt), multiple),
                  lambda: lesson.length_cell(ckpt.model, ckpt.tokenizer, multiple), model_pass=True)


@section("the length experiment")
def length_experiment() -> None:
    shipped = {e.key: e for e in available_models()}
    rope_key = "enc-rope" if "enc-rope" in shipped else None
    if rope_key is None and (ckpt := rope_model()[0]) is not None:  # the sidebar's or the classroom model
        rope_key = next((k for k, e in shipped.items() if e.path and ckpt.path and Path(e.path) == Path(ckpt.path)),
                        st.session_state.get("model_key", ""))
    keys, missing = lesson.experiment_models(list(shipped), rope_key)
    if not keys:
        st.info("No shipped model is available for this experiment yet.")
        return
    st.markdown(lesson.length_intro(keys))
    st.caption(lesson.PACKED_WINDOWS)
    if missing:
        st.caption("Not installed yet, so left out: " + ", ".join(missing) + ".")
    if st.button("Run the length experiment", key="rope_len_run"):
        st.session_state["rope_len_ran"] = True  # later reruns redraw the (cached) result
    if not st.session_state.get("rope_len_ran"):
        return
    bar = st.progress(0.0, text="starting…")
    table = lesson.length_experiment(keys, _file_cell,
                                     lambda done, text: bar.progress(done, text=text))
    show(rfigs.length_losses(table, rope.scaling_labels(), "Held-out loss against context length"),
         key="rope_len_fig", name="rope_length_experiment")
    for note in [*lesson.length_notes(table), lesson.LOWER_IS_BETTER, lesson.NOT_FINE_TUNED]:
        st.caption(note)
    st.dataframe(lesson.length_table(table), key="rope_len_table")


# -- where RoPE operates --------------------------------------------------------------------------------
@section("where RoPE acts")
def where_rope_acts() -> None:
    ckpt, where = rope_model()
    if ckpt is None:
        return
    cfg = ckpt.model.config
    ids = encode_text(ckpt, ROPE_SENTENCE, max_len=cfg.max_len)
    on, off = on_off(ckpt, ids.ids)
    st.markdown(f"Inside every attention layer of {where}, for “{ROPE_SENTENCE}” (T = {len(ids.ids)}):")
    if is_folder_model(ckpt):
        st.caption(lesson.own_rope_sentence(cfg))
    st.dataframe(lesson.where_rows(cfg, on), hide_index=True, key="rope_where_shapes")
    show_checks(lesson.where_claims(cfg, on, off))
    c = st.columns(2)
    layer = share.select(c[0], "layer", range(cfg.n_layers), "rope_where_layer")
    head = share.select(c[1], "head", range(cfg.n_heads), "rope_where_head")
    p_on, p_off, allowed, change = lesson.head_on_off(on, off, layer, head)
    left, right = st.columns(2)
    show(attention_heatmap(p_on, ids.tokens, allowed=allowed, title="RoPE on (as trained)"),
         key="rope_where_on", container=left)
    show(attention_heatmap(p_off, ids.tokens, allowed=allowed, title="RoPE switched off, same weights"),
         key="rope_where_off", container=right)
    st.metric("largest change in an attention weight", f"{change:.3f}")


# -- conventions ----------------------------------------------------------------------------------------
@section("the conventions")
def conventions() -> None:
    d_k = 8
    st.markdown(lesson.CONVENTIONS_INTRO)
    st.dataframe(lesson.convention_pairs(d_k), key="rope_conv_pairs")
    c = st.columns(2)
    t = c[0].slider("q position", 0, 64, 2, key="rope_conv_t", **share.URL)
    s = c[1].slider("k position", 0, 64, 9, key="rope_conv_s", **share.URL)
    res = lesson.convention_check(d_k, t, s)
    st.markdown(lesson.permutation_sentence(res))
    for col, (label, value) in zip(st.columns(3), lesson.convention_scores(res).items()):
        col.metric(label, value)
    show_check(lesson.convention_claim(res))
    st.caption(lesson.wrong_convention_sentence(res))
