"""RoPE: rotate each pair of q and k by position x frequency; scores then depend only on the offset."""

import streamlit as st

from viz_model.lessons import rope as lesson
from viz_model.model_text import is_folder_model
from viz_model.ui import alibi, share
from viz_model.ui import rope as sections
from viz_model.ui.sidebar import current_model

st.title("Rotary position embeddings (RoPE)")
st.markdown(
    "RoPE adds nothing to the token. Instead, inside every head, it **rotates** each pair of dimensions of q "
    "and k by an angle t·θ_i that grows with the position t, with θ_i = base^(−2i/d_k). Rotating both by their "
    "own positions leaves a dot product that only sees the **difference** of the positions: "
    "⟨R_t q, R_s k⟩ = ⟨q, R_(s−t) k⟩."
)

ckpt = current_model()
cfg = ckpt.model.config
live_dk, live_base, live_note = lesson.live_settings(cfg)
st.caption(live_note)
real = ckpt if is_folder_model(ckpt) and cfg.pos_encoding == "rope" else None  # its own theta and scaling
if is_folder_model(ckpt) and real is None:
    st.info(f"The sidebar model ({ckpt.metadata.get('model_type')}) has {cfg.pos_encoding} positions, not RoPE: "
            "the model views below use a RoPE model the app ships instead.")

# Only the open tab runs; each tab is a fragment: moving one of its sliders reruns that tab only.
TABS = {
    "Worked example": sections.worked_example,
    "Pair rotation": lambda: sections.pair_rotation(live_dk, live_base),
    "Angles": lambda: sections.angles_and_wavelengths(live_dk, live_base),
    "Relative scores": lambda: sections.relative_scores(live_dk, live_base),
    "Context extension": lambda: sections.context_extension(lesson.panel_defaults(cfg), real),
    "Length test": sections.length_experiment,
    "Where it acts": sections.where_rope_acts,
    "Conventions": sections.conventions,
    "ALiBi": alibi.alibi_bias,  # the other relative method: a distance penalty on the scores (#40)
}
share.show_tabs(TABS, key="rope_tab")  # only the open tab runs
