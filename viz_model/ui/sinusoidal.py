"""Sections of the Sinusoidal page: curves, table, shift matrix, similarity, and the model views, each checked live."""

from __future__ import annotations

import numpy as np
import streamlit as st

from viz_model.figures import sinusoidal as figs
from viz_model.lessons import sinusoidal as lesson
from viz_model.model_text import token_id
from viz_model.ui import share
from viz_model.ui.cache import cached
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.sidebar import model_with
from viz_model.ui.widgets import show_check


def table(n_pos: int, d: int, base: float) -> np.ndarray:
    """Shared, read-only PE table: the cache hands out the same array (up to 64 MB) without copying it."""
    return cached("pe_table", (n_pos, d, float(base)), lambda: lesson.read_only_pe(n_pos, d, base), model_pass=True)


@section("the same-token view")
def same_token_two_positions() -> None:
    st.header("Same token, different position")
    ckpt, where = model_with("sinusoidal", ("enc-sinusoidal",))
    tid = token_id(ckpt, "the") if ckpt is not None else None
    if tid is None:
        st.info(lesson.NO_SINUSOIDAL_MODEL if ckpt is None else lesson.NO_THE)
        return
    view = lesson.same_token_view(ckpt.model, tid)
    st.markdown(lesson.same_token_sentence(where))
    show(figs.vector_rows(view.vectors, view.dims, view.title), key="sinusoidal_same_token",
         name="same_token_two_positions")
    st.metric("cosine similarity of the two inputs", f"{view.cosine:.4f}", help="1 would mean identical directions.")
    show_check(view.check)


@section("the learned-table view")
def learned_vs_sinusoidal() -> None:
    st.header("Learned vs sinusoidal")
    ckpt, where = model_with("learned", ("enc-learned",))
    if ckpt is None:
        st.info(lesson.NO_LEARNED_MODEL)
        return
    learned, sims = lesson.learned_view(ckpt.model)
    st.markdown(lesson.learned_sentence(where, learned))
    for col, key, (title, sim) in zip(st.columns(2), ("sinusoidal_learned_sim", "sinusoidal_sin_sim"), sims.items()):
        show(figs.similarity_heatmap(sim, None, title, "cosine"), key=key, container=col)
    show(figs.pe_heatmap(learned, title=f"The learned position table ({len(learned)} × {learned.shape[1]})",
                         name="learned"), key="sinusoidal_learned_table", name="learned_position_table")


# -- sinusoidal page tabs -------------------------------------------------------------------------------
@section("the curves view")
def curves(d: int, n_pos: int, base: float) -> None:
    pe = table(n_pos, d, base)
    if "sinusoidal_dims" in st.session_state:  # d may have shrunk under the kept choice
        st.session_state["sinusoidal_dims"] = [j for j in st.session_state["sinusoidal_dims"] if j < d]
    dims = st.multiselect("dimensions to plot", list(range(d)), default=lesson.default_dims(d),
                          key="sinusoidal_dims", **share.URL, max_selections=12)
    # cached figures: a new figure object is summarised and serialised again on every rerun (ui.chart)
    show(cached("sinusoidal_curves", (n_pos, d, float(base), tuple(dims)),
                lambda: figs.pe_curves(pe, dims, "PE value against position")),
         key="sinusoidal_curves", name="sinusoidal_curves")
    st.markdown("**The lecture's d = 4 view.** Each vertical slice is one position's whole vector.")
    small, rows, speeds = cached("sinusoidal_d4", (float(base),), lambda: lesson.d4_view(base))
    left, right = st.columns([3, 2])
    show(cached("sinusoidal_d4_slices", (float(base),),
                lambda: figs.pe_slices(small, [0, 2, 5], "d = 4: slices at positions 0, 2 and 5")),
         key="sinusoidal_slices", name="sinusoidal_d4_slices", container=left)
    right.dataframe(rows, key="sinusoidal_d4")
    right.caption(speeds)


@section("the table view")
def table_and_bits(d: int, n_pos: int, base: float) -> None:
    pi, di = lesson.decimate(n_pos, 256), lesson.decimate(d, 256)
    show(figs.table_heatmap(table(n_pos, d, base), pi, di), key="sinusoidal_heatmap", name="sinusoidal_table")
    st.markdown(lesson.BINARY_COUNTING)
    n_bits = st.slider("positions shown", 8, 64, 16, step=8, key="sinusoidal_bits", **share.URL)
    show(figs.bits_vs_signs(*lesson.binary_view(table(n_bits, d, base))), key="sinusoidal_binary",
         name="sinusoidal_binary")


@section("the shift view")
def shift(d: int, n_pos: int, base: float) -> None:
    k = st.slider("shift k", 1, 64, 3, key="sinusoidal_k", **share.URL)
    ts = lesson.shift_positions(n_pos, k)
    key = (d, k, base, tuple(ts))  # the same for a whole class: the check and both figures are built once per server
    check, matrix, title = cached("sinusoidal_shift", key, lambda: lesson.shift_view(d, k, base, ts))
    matrix_fig, err_fig = cached("sinusoidal_shift_figures", key, lambda: figs.shift_figures(check, matrix, title))
    show(matrix_fig, key="sinusoidal_mk", name=f"shift_matrix_M{k}")
    left, right = st.columns(2)
    left.dataframe(check, hide_index=True, key="sinusoidal_shift_table",
                   column_config={lesson.SHIFT_ERROR: st.column_config.NumberColumn(lesson.SHIFT_ERROR, format="%.1e")})
    show(err_fig, key="sinusoidal_shift_err", container=right)
    show_check(lesson.shift_claim(check, k, ts))
    st.caption(lesson.ONE_MAP)


@section("the similarity view")
def similarity(d: int, n_pos: int, base: float) -> None:
    pe = table(n_pos, d, base)
    si = lesson.decimate(n_pos, 256)
    left, right = st.columns(2)
    show(figs.similarity_heatmap(lesson.gram(pe, si), None, "P·Pᵀ: dot products of positions", "P·Pᵀ", labels=si),
         key="sinusoidal_sim", name="sinusoidal_similarity", container=left)
    share.valid("sinusoidal_t0", range(1, max(1, n_pos // 2) + 1), min(10, max(1, n_pos // 2)))
    t0 = st.slider("second starting position t", 1, max(1, n_pos // 2), min(10, max(1, n_pos // 2)),
                   key="sinusoidal_t0", **share.URL)
    a, b, check, largest = lesson.offset_view(pe, t0)
    show(figs.dot_vs_offset({"t = 0": a, f"t = {t0}": b}, "Dot product against offset"), key="sinusoidal_dot",
         name="sinusoidal_dot_offset", container=right)
    show_check(check)
    st.caption(largest)
