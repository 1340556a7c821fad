"""Sinusoidal position encodings: curves, the table, the binary analogy, the shift matrix M_k, similarity."""

import numpy as np
import pandas as pd
import streamlit as st

from viz_model.figures import position as figs
from viz_model.positional import shift_matrix
from viz_model.ui import position as pos
from viz_model.ui import position_sections as sections
from viz_model.ui.chart import show
from viz_model.ui.errors import guard

st.title("Sinusoidal position encodings")
st.markdown(
    "Self-attention alone cannot tell *where* a token is, so the 2017 transformer **adds** a fixed vector P_p "
    "to the token at position p: `P[p, 2i] = sin(p·ω_i)`, `P[p, 2i+1] = cos(p·ω_i)` with `ω_i = base^(−2i/d)`. "
    "Each pair (sin, cos) is a clock hand turning at its own speed: fast pairs first, slow ones last."
)


@st.cache_data(max_entries=6, show_spinner=False)  # the largest table is 8,192 x 1,024 floats
def table(n_pos: int, d: int, base: float) -> np.ndarray:
    return pos.pe_numpy(n_pos, d, base)


c1, c2, c3 = st.columns(3)
d = c1.slider("d_model (even)", 4, 1024, 64, step=2, key="sinusoidal_d")
n_pos = c2.slider("number of positions", 8, 8192, 128, step=8, key="sinusoidal_npos")
base = c3.select_slider("base", [10.0, 100.0, 1000.0, 10000.0, 100000.0], value=10000.0, key="sinusoidal_base",
                        format_func=lambda b: f"{b:,.0f}")
pe = table(n_pos, d, base)

curves, grid, shift, similarity, model_tab = st.tabs(
    ["Curves", "Table & binary analogy", "Shift matrix M_k", "Similarity", "Inside the model"])

with curves:
    default_dims = [j for j in (0, 1, 2, 3, d // 2, d - 2) if j < d]
    dims = st.multiselect("dimensions to plot", list(range(d)), default=sorted(set(default_dims)),
                          key="sinusoidal_dims", max_selections=12)
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

with grid:
    pi, di = pos.decimate(n_pos, 256), pos.decimate(d, 256)
    note = "" if len(pi) == n_pos and len(di) == d else f" (every {n_pos // len(pi)}th position / dimension shown)"
    show(figs.pe_heatmap(pe, pi, di, f"The PE table: {n_pos} positions × {d} dimensions{note}"),
                    key="sinusoidal_heatmap", name="sinusoidal_table")
    st.markdown("**Binary counting.** The lowest bit of a counter flips every step, the next every two steps… "
                "The sin columns behave alike: fast pairs change sign often, slow pairs rarely — but smoothly.")
    n_bits = st.slider("positions shown", 8, 64, 16, step=8, key="sinusoidal_bits")
    bits = pos.position_bits(n_bits, max(1, int(np.ceil(np.log2(n_bits)))))
    show(figs.bits_vs_signs(bits, pos.sin_signs(table(n_bits, d, base), min(8, d // 2))),
                    key="sinusoidal_binary", name="sinusoidal_binary")

with shift:
    k = st.slider("shift k", 1, 64, 3, key="sinusoidal_k")
    n_show = min(d, 8)
    M = shift_matrix(d, k, base).numpy()
    show(figs.matrix_heatmap(M[:n_show, :n_show], f"M_{k}: one 2×2 rotation per (sin, cos) pair"
                                        + ("" if n_show == d else f" (first {n_show} of {d} dimensions)")),
                    key="sinusoidal_mk", name=f"shift_matrix_M{k}")
    ts = sorted({t for t in (0, 1, 2, 7, 50, 300, n_pos - 1 - k) if 0 <= t < n_pos - k} or {0})
    check = pos.shift_check(d, k, ts, base)
    left, right = st.columns(2)
    left.dataframe(check.style.format({check.columns[-1]: "{:.1e}"}), hide_index=True, key="sinusoidal_shift_table")
    with right:
        show(figs.shift_errors(check, "Same M_k, every t"), key="sinusoidal_shift_err")
    sections.verdict(float(check.iloc[:, -1].max()), 1e-9, f"M_{k}·P_t = P_(t+{k}) for t ∈ {ts} with one matrix")
    st.caption("M_k is built from k and ω only — no t appears in it — so a shift by k is one linear map, the "
               "same at every position, which attention can learn.")

with similarity:
    si = pos.decimate(n_pos, 256)
    left, right = st.columns(2)
    with left:
        show(figs.similarity_heatmap(pe[si] @ pe[si].T, None, "P·Pᵀ: dot products of positions", "P·Pᵀ",
                                     labels=si),
                          key="sinusoidal_sim", name="sinusoidal_similarity")
    t0 = st.slider("second starting position t", 1, max(1, n_pos // 2), min(10, max(1, n_pos // 2)),
                   key="sinusoidal_t0")
    a, b = pos.dot_by_offset(pe, 0), pos.dot_by_offset(pe, t0)
    with right:
        show(figs.dot_vs_offset({"t = 0": a, f"t = {t0}": b}, "Dot product against offset"),
                           key="sinusoidal_dot", name="sinusoidal_dot_offset")
    sections.verdict(float(np.abs(a[: len(b)] - b).max()), 1e-9,
                     f"P_t·P_(t+k) depends only on k: the curves for t = 0 and t = {t0} coincide")
    st.caption(f"The dot product equals Σ cos(k·ω_i): largest at k = 0 ({a[0]:.0f} = d/2), symmetric in ±k.")

with model_tab, guard("the model views"):
    sections.same_token_two_positions()
    sections.learned_vs_sinusoidal()
