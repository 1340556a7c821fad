"""Attention vs attribution: attention, rollout, gradient × input and occlusion on one prediction, compared."""

import streamlit as st

from viz_model.lessons import attribution as lesson
from viz_model.ui import attribution as ui
from viz_model.ui.sidebar import current_model

st.title("Attention vs attribution")
st.markdown(lesson.INTRO)

ckpt = current_model()
if not ckpt.model.config.causal:
    st.info(lesson.NOT_CAUSAL)
    st.stop()
enc = ui.sentence(ckpt)
ui.view(ckpt, enc)
st.info(lesson.NOTE, icon=":material/menu_book:")
