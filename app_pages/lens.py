"""Logit lens: every layer's residual stream read through the model's own final norm and unembedding."""

import streamlit as st

from viz_model.lessons import lens as lesson
from viz_model.ui import lens as ui
from viz_model.ui.sidebar import current_model
from viz_model.ui.widgets import sentence_input

st.title("Logit lens")
st.markdown(lesson.INTRO)

ckpt = current_model()
enc = sentence_input("lens", ckpt, max_tokens=lesson.max_tokens(ckpt.model))
if len(enc.ids) == 1:
    st.info(lesson.ONE_TOKEN)
key, view = ui.measure(ckpt, enc.ids)

st.header("What each layer would predict")
ui.top_map(ckpt, enc, key, view)

st.header("When does the final prediction appear?")
ui.rank_view(ckpt, enc, key, view)

st.subheader("What the logit lens is not")
st.markdown(lesson.CAVEAT)
