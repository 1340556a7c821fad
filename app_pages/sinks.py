"""Attention sinks: how much each head reads the first token, what the loss does without it, and why a sliding
KV cache needs it (StreamingLLM, Xiao et al., 2023), measured live on the sidebar's model."""

import streamlit as st

from viz_model.lessons import sinks as lesson
from viz_model.ui import share
from viz_model.ui import sinks as ui
from viz_model.ui.sidebar import current_model

st.title("Attention sinks")
st.markdown(lesson.INTRO)

ckpt = current_model()
try:
    lesson.check_model(ckpt.model)
except ValueError as e:
    st.info(str(e))
    st.stop()

source = st.selectbox("Held-out text", list(lesson.SOURCES), format_func=lesson.SOURCES.get, key="sinks_source",
                      **share.URL)

st.header("Which heads read the first token?")
ui.share_view(ckpt, source)

st.header("The loss without the first token")
ui.loss_view(ckpt, source)

st.header("A sliding KV cache on a long text")
ui.stream_view(ckpt, source)
