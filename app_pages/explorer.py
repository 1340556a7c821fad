"""Explorer: every head at a glance, one head large, and every step of attention for it, live."""

import numpy as np
import streamlit as st

from viz_model import masks, model_text
from viz_model.lessons import explorer as lesson
from viz_model.lessons.common import roles_measured_on
from viz_model.ui import cache, share, widgets
from viz_model.ui import explorer as ui
from viz_model.ui.sidebar import current_model

st.title("Attention explorer")
st.markdown("Every head of the model in the sidebar, on your sentence, computed live. Choose a **Layer** and "
            "**Head** under the grid to open one large, then follow it step by step from **X** to **W_O**.")

ckpt = current_model()
model, cfg = ckpt.model, ckpt.model.config
enc = widgets.sentence_input("explorer", ckpt)
tokens, T = enc.tokens, len(enc.ids)

ui.tokens_view(ckpt, enc)

with st.expander("Knobs that re-run the model", expanded=False):
    k1, k2, k3, k4 = st.columns(4)
    scale_on = k1.toggle("Scale scores by 1/√d_k", value=True, key="explorer_scale", **share.URL)
    temperature = k2.slider("Attention temperature", 0.1, 5.0, 1.0, 0.1, key="explorer_temp", **share.URL,
                            help="Scores are divided by this before the softmax.")
    mask_kind = k3.radio("Mask", masks.MODEL_MASKS, index=masks.MODEL_MASKS.index(cfg.mask), key="explorer_mask",
                         format_func=masks.short_name, **share.URL)
    average = k4.toggle("Average of all heads", value=False, key="explorer_avg", **share.URL)
    if (warning := lesson.off_distribution(cfg.mask, mask_kind)) is not None:
        st.warning(warning)
    if not scale_on:
        st.caption(f"Without 1/√d_k (= 1/{np.sqrt(cfg.d_k):.3g}) the scores are larger, so softmax rows saturate: "
                   "watch the row entropies drop in the tab “How sharp is each row?”.")

mask, mask_note = lesson.knob_mask(mask_kind, T)
if mask_note is not None:
    st.caption(mask_note)
bits = cache.mask_bits(mask)
mid = cache.model_id(ckpt)
tkey = cache.input_key(mid, enc.ids, tokens, bits, scale_on, float(temperature))  # figure cache key

st.header("All heads at a glance")
roles, measured = ui.roles_for(ckpt)
page = ui.grid_start(cfg)  # the pass traces only the grid page's layers (all of them for a small model)
data = cache.cached_trace(model, mid, tuple(enc.ids), bits, scale_on, float(temperature), lesson.grid_layers(cfg, page))
ui.grid(cfg, data["probs"], tokens, roles, data["allowed"], tkey, page)
if (note := lesson.kv_note(cfg)) is not None:
    st.caption(note)
    widgets.show_check(lesson.kv_share_claim(data, cfg))
if roles is not None and (table := ui.roles_table(ckpt, measured)) is not None:
    label = "measured now on this model, " + roles_measured_on(None, True) if measured else \
        "measured when the model was built, " + roles_measured_on(ckpt.metadata, model_text.is_folder_model(ckpt))
    with st.expander(f"Head roles, {label}"):
        widgets.answer_table("explorer_roles_table", table)  # names the previous-token head: hidden in a class poll
        st.caption(lesson.ROLE_LEGEND if measured is None else lesson.MEASURED_LEGEND.format(
            n=8, bos=f": {model_text.start_token(ckpt)[1]}" if model_text.uses_bos(ckpt) else ""))

ui.head_view(ckpt, enc, data, tkey, (bits, scale_on, float(temperature)), average, roles)
