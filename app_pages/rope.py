"""RoPE: rotate each pair of q and k by position x frequency; scores then depend only on the offset."""

import streamlit as st

from viz_model import rope
from viz_model.ui import rope_sections as sections
from viz_model.ui import share
from viz_model.ui.sidebar import current_model

st.title("Rotary position embeddings (RoPE)")
st.markdown(
    "RoPE adds nothing to the token. Instead, inside every head, it **rotates** each pair of dimensions of q "
    "and k by an angle t·θ_i that grows with the position t, with θ_i = base^(−2i/d_k). Rotating both by their "
    "own positions leaves a dot product that only sees the **difference** of the positions: "
    "⟨R_t q, R_s k⟩ = ⟨q, R_(s−t) k⟩."
)

share.bind("method", "rope_ext_method", choices=list(rope.ROPE_INIT_FUNCTIONS))
share.bind("shift", "rope_shift", int, lo=0, hi=1000)
cfg = current_model().model.config
live_dk = cfg.d_k if cfg.pos_encoding == "rope" and cfg.d_k % 2 == 0 else 32
live_base = cfg.rope_base if cfg.pos_encoding == "rope" else 10000.0
st.caption(f"Pair and score views use d_k = {live_dk} and base {live_base:,.0f}"
           + (" (the sidebar model's heads)." if cfg.pos_encoding == "rope" else "."))

# Each tab is a fragment: moving one of its sliders reruns that tab only.
tabs = st.tabs(["Worked example", "Pair rotation", "Angles", "Relative scores", "Context extension",
                "Length test", "Where it acts", "Conventions"])
with tabs[0]:
    sections.worked_example()
with tabs[1]:
    sections.pair_rotation(live_dk, live_base)
with tabs[2]:
    sections.angles_and_wavelengths(live_dk, live_base)
with tabs[3]:
    sections.relative_scores(live_dk, live_base)
with tabs[4]:
    sections.context_extension(cfg.max_len if cfg.pos_encoding == "rope" else 4096)
with tabs[5]:
    sections.length_experiment()
with tabs[6]:
    sections.where_rope_acts()
with tabs[7]:
    sections.conventions()
