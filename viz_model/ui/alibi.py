"""The RoPE page's ALiBi tab: the bias −m_h·|i − j| of every head, its slopes, and a model trained with it."""

from __future__ import annotations

import streamlit as st

from viz_model.figures import alibi as figs
from viz_model.lecture import ROPE_SENTENCE
from viz_model.lessons import alibi as lesson
from viz_model.ui import share
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.chart import show
from viz_model.ui.errors import section
from viz_model.ui.sidebar import model_with
from viz_model.ui.widgets import encode_text, show_checks

KINDS = {"decoder (causal)": True, "encoder (both sides)": False}


@section("the ALiBi bias")
def alibi_bias() -> None:
    st.markdown(lesson.INTRO)
    c = st.columns(3)
    heads = c[0].slider("heads", 1, lesson.MAX_HEADS, 4, key="rope_alibi_heads", **share.URL)
    n_pos = c[1].slider("positions", 2, lesson.MAX_POSITIONS, 12, key="rope_alibi_pos", **share.URL)
    causal = KINDS[c[2].radio("attention", list(KINDS), horizontal=True, key="rope_alibi_kind", **share.URL)]
    bias, allowed, slopes = cached("alibi_bias", (heads, n_pos, causal), lambda: lesson.bias_view(heads, n_pos, causal))
    show(cached("alibi_fig", (heads, n_pos, causal), lambda: figs.bias_heads(
        bias, allowed, slopes, f"The bias added to each head's scores, {heads} heads × {n_pos} positions")),
         key="rope_alibi_fig", name="alibi_bias")
    st.caption(lesson.CAUSAL_NOTE)
    show_checks(lesson.bias_claims(bias, allowed))
    st.dataframe(lesson.slopes_table(heads), hide_index=True, key="rope_alibi_slopes")
    _inside_a_model()


def _inside_a_model() -> None:
    ckpt, where = model_with("alibi", ("enc-alibi",))
    if ckpt is None:
        st.info(lesson.NO_ALIBI_MODEL)
        return
    ids = encode_text(ckpt, ROPE_SENTENCE, max_len=ckpt.model.config.max_len).ids
    key = input_key(model_id(ckpt), tuple(ids))
    on, off = cached("alibi_on_off", (key,), lambda: lesson.alibi_on_off(ckpt.model, ids), model_pass=True)
    st.markdown(lesson.MODEL_INTRO.format(where=where, sentence=ROPE_SENTENCE, T=len(ids)))
    show_checks(lesson.model_claims(ckpt.model, on, off))
    rows = lesson.reach_rows(ckpt.model, on)
    st.dataframe(rows, hide_index=True, key="rope_alibi_reach")
    st.caption(lesson.reach_sentence(rows))
