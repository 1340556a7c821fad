"""Sinusoidal position encodings: curves, the table, the binary analogy, the shift matrix M_k, similarity."""

import streamlit as st

from viz_model.ui import share
from viz_model.ui import sinusoidal as sections

st.title("Sinusoidal position encodings")
st.markdown(
    "Self-attention alone cannot tell *where* a token is, so the 2017 transformer **adds** a fixed vector P_p "
    "to the token at position p: `P[p, 2i] = sin(p·ω_i)`, `P[p, 2i+1] = cos(p·ω_i)` with `ω_i = base^(−2i/d)`. "
    "Each pair (sin, cos) is a clock hand turning at its own speed: fast pairs first, slow ones last."
)

BASES = [10.0, 100.0, 1000.0, 10000.0, 100000.0]
c1, c2, c3 = st.columns(3)
d = c1.slider("d_model (even)", 4, 1024, 64, step=2, key="sinusoidal_d", **share.URL)
n_pos = c2.slider("number of positions", 8, 8192, 128, step=8, key="sinusoidal_npos", **share.URL)
base = c3.select_slider("base", BASES, value=10000.0, key="sinusoidal_base", **share.URL,
                        format_func=lambda b: f"{b:,.0f}")

# Only the open tab runs; each tab is a fragment: its own sliders rerun that tab only, the three above the page.
TABS = {
    "Curves": lambda: sections.curves(d, n_pos, base),
    "Table & binary analogy": lambda: sections.table_and_bits(d, n_pos, base),
    "Shift matrix M_k": lambda: sections.shift(d, n_pos, base),
    "Similarity": lambda: sections.similarity(d, n_pos, base),
    "Inside the model": lambda: (sections.same_token_two_positions(), sections.learned_vs_sinusoidal()),
}
share.show_tabs(TABS, key="sinusoidal_tab")  # only the open tab runs
