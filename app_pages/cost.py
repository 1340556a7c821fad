"""Cost: what attention costs on this server, measured — time and memory against T, and the KV cache's trade."""

import streamlit as st

from viz_model.ui import cost as ui
from viz_model.ui.sidebar import MODEL_KEY, current_model

st.title("Cost")
st.markdown("Attention compares **every pair of positions**: T tokens give a T×T score matrix per head. This page "
            "measures what that costs on the machine the app runs on — time and peak memory of one attention layer "
            "as T doubles — for the traced path, which keeps the T×T matrix, and for PyTorch's "
            "`scaled_dot_product_attention` (SDPA), which never stores it.")

st.header("1 · One attention layer against T, on this server's CPU")
st.markdown("On log–log axes a power law is a straight line, and its **slope is the exponent**: 1 means doubling T "
            "doubles the cost, 2 means it quadruples it. Click to measure; the result is kept for these settings "
            "and shared with everyone on this server.")
ui.measure(ui.CPU)

st.header("2 · The same on a GPU")
ui.gpu()

st.header("3 · The KV-cache trade")
st.markdown("While generating, a decoder keeps every earlier token's **K and V** (the KV cache) so that each new "
            "token costs one row of attention instead of the whole matrix. The price is memory that grows with "
            "T **and** with the number of layers. Computed from the models' shapes, nothing measured:")
ckpt = current_model()
ui.kv_cache(st.session_state.get(MODEL_KEY, "sidebar model"), ckpt.model.config)

st.header("4 · Attention against recurrence")
ui.recurrence_link()
