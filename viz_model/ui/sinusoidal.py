"""Sections of the Sinusoidal page: curves, table, shift matrix, similarity, and the model views, each checked live."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from viz_model.figures import sinusoidal as figs
from viz_model.figures.common import ordinal
from viz_model.lessons import sinusoidal as lesson
from viz_model.positional import shift_matrix
from viz_model.ui import share
from viz_model.ui.cache import cached
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.sidebar import model_with
from viz_model.ui.widgets import token_id, verdict


@st.cache_resource(max_entries=6, show_spinner=False)
def table(n_pos: int, d: int, base: float) -> np.ndarray:
    """Shared, read-only PE table: cache_resource hands out the same array (up to 64 MB) without copying it."""
    pe = lesson.pe_numpy(n_pos, d, base)
    pe.setflags(write=False)
    return pe


@section("the same-token view")
def same_token_two_positions() -> None:
    st.header("Same token, different position")
    ckpt, where = model_with("sinusoidal", ("enc-sinusoidal",))
    if ckpt is None:
        st.info("The shipped “enc-sinusoidal” model is not installed yet (and the sidebar model does not use "
                "sinusoidal encodings), so this view has no model to read. Pick a sinusoidal model in the sidebar.")
        return
    tid = token_id(ckpt, "the")
    if tid is None:
        st.info("This model's vocabulary has no “the”, so this view is skipped.")
        return
    vecs = lesson.input_vectors(ckpt.model, tid, [0, 2])
    d = ckpt.model.config.d_model
    dims = np.arange(min(d, 64))
    st.markdown(f"What the first layer of {where} reads for **“the”** at positions 0 and 2: "
                f"its token embedding (×√d_model) plus the position's sinusoid. Same word, different input.")
    show(figs.vector_rows(vecs, dims, f"“the” at positions 0 and 2 (first {len(dims)} of {d} dims)"),
         key="sinusoidal_same_token", name="same_token_two_positions")
    a, b = vecs["input at position 0"], vecs["input at position 2"]
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    st.metric("cosine similarity of the two inputs", f"{cos:.4f}", help="1 would mean identical directions.")
    table = lesson.pe_numpy(3, d, 10000.0)
    err = float(np.abs((b - a) - (table[2] - table[0])).max())
    verdict(err, 1e-5, "the two inputs differ by exactly P_2 − P_0: the token part cancels")


@section("the learned-table view")
def learned_vs_sinusoidal() -> None:
    st.header("Learned vs sinusoidal")
    ckpt, where = model_with("learned", ("enc-learned",))
    if ckpt is None:
        st.info("The shipped “enc-learned” model is not installed yet (and the sidebar model does not learn its "
                "positions), so there is no learned table to compare.")
        return
    learned = ckpt.model.pos_emb.weight.detach().double().cpu().numpy()  # (max_len, d)
    n, d = learned.shape
    st.markdown(f"{where.capitalize()} learned one vector per position (rows 0..{n - 1}); it has no row for "
                f"position {n}, so it cannot read longer texts. Cosine similarity of its rows, beside the "
                "sinusoidal table of the same size:")
    left, right = st.columns(2)
    with left:
        show(figs.similarity_heatmap(lesson.cosine_similarity(learned), None, "learned positions",
             "cosine"), key="sinusoidal_learned_sim")
    with right:
        show(figs.similarity_heatmap(lesson.cosine_similarity(lesson.pe_numpy(n, d, 10000.0)), None,
             "sinusoidal positions", "cosine"), key="sinusoidal_sin_sim")
    show(figs.pe_heatmap(learned, title=f"The learned position table ({n} × {d})", name="learned"),
         key="sinusoidal_learned_table", name="learned_position_table")


# -- sinusoidal page tabs -------------------------------------------------------------------------------
@section("the curves view")
def curves(d: int, n_pos: int, base: float) -> None:
    pe = table(n_pos, d, base)
    default_dims = [j for j in (0, 1, 2, 3, d // 2, d - 2) if j < d]
    if "sinusoidal_dims" in st.session_state:  # d may have shrunk under the kept choice
        st.session_state["sinusoidal_dims"] = [j for j in st.session_state["sinusoidal_dims"] if j < d]
    dims = st.multiselect("dimensions to plot", list(range(d)), default=sorted(set(default_dims)),
                          key="sinusoidal_dims", **share.URL, max_selections=12)
    show(figs.pe_curves(pe, dims, "PE value against position"), key="sinusoidal_curves", name="sinusoidal_curves")
    st.markdown("**The lecture's d = 4 view.** Each vertical slice is one position's whole vector.")
    small = table(8, 4, base)
    left, right = st.columns([3, 2])
    with left:
        show(figs.pe_slices(small, [0, 2, 5], "d = 4: slices at positions 0, 2 and 5"),
             key="sinusoidal_slices", name="sinusoidal_d4_slices")
    right.dataframe(pd.DataFrame(small[[0, 2, 5]].round(4), index=["P_0", "P_2", "P_5"],
                                 columns=["sin p·ω₀", "cos p·ω₀", "sin p·ω₁", "cos p·ω₁"]), key="sinusoidal_d4")
    right.caption(f"ω = [1, {base ** (-0.5):g}]: the first pair turns one radian per position, the second "
                  f"{base ** (-0.5):g} radians.")


def every_nth(n: int, shown: int, what: str) -> str | None:
    """"every 32nd position" when `shown` evenly spaced ones of `n` are drawn (lesson.decimate), "about" when the
    spacing is not a whole number; None when all are drawn."""
    if shown >= n:
        return None
    step = (n - 1) / max(shown - 1, 1)
    if round(step) < 2:  # "about every 1st" says nothing
        return f"{shown:,} of {n:,} {what}s"
    return f"{'' if step == round(step) else 'about '}every {ordinal(round(step))} {what}"


@section("the table view")
def table_and_bits(d: int, n_pos: int, base: float) -> None:
    pe = table(n_pos, d, base)
    pi, di = lesson.decimate(n_pos, 256), lesson.decimate(d, 256)
    parts = [s for s in (every_nth(n_pos, len(pi), "position"), every_nth(d, len(di), "dimension")) if s]
    note = f" ({' and '.join(parts)} shown)" if parts else ""
    show(figs.pe_heatmap(pe, pi, di, f"The PE table: {n_pos} positions × {d} dimensions{note}"),
         key="sinusoidal_heatmap", name="sinusoidal_table")
    st.markdown("**Binary counting.** The lowest bit of a counter flips every step, the next every two steps… "
                "The sin columns behave alike: fast pairs change sign often, slow pairs rarely — but smoothly.")
    n_bits = st.slider("positions shown", 8, 64, 16, step=8, key="sinusoidal_bits", **share.URL)
    bits = lesson.position_bits(n_bits, max(1, int(np.ceil(np.log2(n_bits)))))
    show(figs.bits_vs_signs(bits, lesson.sin_signs(table(n_bits, d, base), min(8, d // 2))),
         key="sinusoidal_binary", name="sinusoidal_binary")


@section("the shift view")
def shift(d: int, n_pos: int, base: float) -> None:
    k = st.slider("shift k", 1, 64, 3, key="sinusoidal_k", **share.URL)
    n_show = min(d, 8)
    ts = sorted({t for t in (0, 1, 2, 7, 50, 300, n_pos - 1 - k) if 0 <= t < n_pos - k} or {0})
    # The same (d, k, base, t) for a whole class: the check and both figures are computed once per server.
    check, matrix_fig, err_fig = cached("sinusoidal_shift", (d, k, base, tuple(ts)), lambda: _shift_parts(
        d, k, base, ts, n_show))
    show(matrix_fig, key="sinusoidal_mk", name=f"shift_matrix_M{k}")
    left, right = st.columns(2)
    error = check.columns[-1]
    left.dataframe(check, hide_index=True, key="sinusoidal_shift_table",
                   column_config={error: st.column_config.NumberColumn(error, format="%.1e")})
    with right:
        show(err_fig, key="sinusoidal_shift_err")
    verdict(float(check.iloc[:, -1].max()), 1e-9, f"M_{k}·P_t = P_(t+{k}) for t ∈ {ts} with one matrix")
    st.caption("M_k is built from k and ω only — no t appears in it — so a shift by k is one linear map, the "
               "same at every position, which attention can learn.")


def _shift_parts(d: int, k: int, base: float, ts: list[int], n_show: int):
    """(check table, M_k heatmap, error chart) of one shift k: read-only, shared."""
    M = shift_matrix(d, k, base).numpy()
    title = f"M_{k}: one 2×2 rotation per (sin, cos) pair" + (
        "" if n_show == d else f" (first {n_show} of {d} dimensions)")
    check = lesson.shift_check(d, k, ts, base)
    return check, figs.matrix_heatmap(M[:n_show, :n_show], title), figs.shift_errors(check, "Same M_k, every t")


@section("the similarity view")
def similarity(d: int, n_pos: int, base: float) -> None:
    pe = table(n_pos, d, base)
    si = lesson.decimate(n_pos, 256)
    left, right = st.columns(2)
    with left:
        show(figs.similarity_heatmap(pe[si] @ pe[si].T, None, "P·Pᵀ: dot products of positions", "P·Pᵀ",
                                     labels=si), key="sinusoidal_sim", name="sinusoidal_similarity")
    share.valid("sinusoidal_t0", range(1, max(1, n_pos // 2) + 1), min(10, max(1, n_pos // 2)))
    t0 = st.slider("second starting position t", 1, max(1, n_pos // 2), min(10, max(1, n_pos // 2)),
                   key="sinusoidal_t0", **share.URL)
    a, b = lesson.dot_by_offset(pe, 0), lesson.dot_by_offset(pe, t0)
    with right:
        show(figs.dot_vs_offset({"t = 0": a, f"t = {t0}": b}, "Dot product against offset"),
             key="sinusoidal_dot", name="sinusoidal_dot_offset")
    verdict(float(np.abs(a[: len(b)] - b).max()), 1e-9,
            f"P_t·P_(t+k) depends only on k: the curves for t = 0 and t = {t0} coincide")
    st.caption(f"The dot product equals Σ cos(k·ω_i): largest at k = 0 ({a[0]:.0f} = d/2), symmetric in ±k.")
