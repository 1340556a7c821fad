"""Streamlit glue for the Start page: one head of the sentence's attention, as a fragment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.figures.attention import attention_heatmap
from viz_model.lessons import common as common_lesson
from viz_model.lessons import english as english_lesson
from viz_model.lessons import start as lesson
from viz_model.model_text import is_folder_model, start_token
from viz_model.ui import chart, widgets
from viz_model.ui.cache import cached, input_key, model_id, shared_results
from viz_model.ui.errors import section
from viz_model.ui.widgets import layer_head, show_check, show_checks


def model_card(ckpt: Checkpoint, device: str) -> dict[str, str]:
    """What the model is, one value per row of the Start page's card (lessons.start.model_card)."""
    return lesson.model_card(ckpt.model, ckpt.metadata or {}, device, is_folder_model(ckpt))


def attention_of(ckpt: Checkpoint, ids: tuple[int, ...], layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(probs (H, T, T) of `layer`, allowed (T, T)) of one pass that traces only the layer on screen and stops there
    (no later block, no LM head: GPT-2 small's layer 0 at T = 32 in 6 ms instead of 85), shared by every student on
    the same sentence and layer (read-only arrays: nothing mutates them)."""
    return cached("start_attention", (input_key(model_id(ckpt), ids), layer),
                  lambda: common_lesson.layer_attention(ckpt.model, ids, layer))


@section("the attention view")  # the Layer and Head pickers rerun only this part of the page
def attention_view(ckpt: Checkpoint, enc) -> None:
    """Layer and Head pickers, the head's attention weights, its measured role and the row-sum check."""
    cfg, meta = ckpt.model.config, ckpt.metadata
    layer, head = layer_head("start", cfg.n_layers, cfg.n_heads)
    probs, allowed = attention_of(ckpt, tuple(enc.ids), layer)
    key = (input_key(model_id(ckpt), tuple(enc.ids), tuple(enc.tokens)), layer, head)
    fig = cached("start_heatmap", key, lambda: attention_heatmap(
        probs[head], enc.tokens, allowed=allowed, title=f"Layer {layer} · head {head}: attention weights"))
    chart.show(fig, key="start_heatmap", name=f"attention_L{layer}_H{head}")
    first = common_lesson.first_token_words(start_token(ckpt), enc.ids)
    behaviour = common_lesson.head_behaviour(probs[head], enc.ids)
    if role := lesson.role_line(meta, layer, head, behaviour, is_folder_model(ckpt), first):
        widgets.answer_line("start_role", role, st.caption)  # #39: it tells the answer; hidden in class
    show_check(lesson.row_sum_check(probs[head], cfg.causal))


# -- the English model's measured quality ------------------------------------------------------------------
def english_quality(ckpt: Checkpoint) -> None:
    """What the English model learned, on text it never trained on: the build's numbers, and a button that
    measures them again here."""
    meta = ckpt.metadata
    st.header("What it has learned, measured")
    st.markdown(english_lesson.QUALITY_INTRO)
    st.dataframe(pd.DataFrame(english_lesson.quality_rows(meta)), hide_index=True)
    show_checks(english_lesson.facts(meta))
    results = shared_results("english_quality", size=4)
    live = results.get(model_id(ckpt))
    if live is None and st.button("Measure again on this server", key="start_measure",
                                  help="Runs the model on the 800 held-out texts now (a few seconds on 2 cores)."):
        with results.turn("Another student's measurement is running; try again in a few seconds.") as mine:
            if mine:
                with st.spinner("Measuring on 800 held-out texts…"):
                    live = english_lesson.measure_again(ckpt.model, ckpt.tokenizer, meta)
                results.put(model_id(ckpt), live)
    if live is not None:
        st.caption("Measured again on this server just now:")
        st.dataframe(pd.DataFrame(english_lesson.quality_rows(live)), hide_index=True)
        show_checks(english_lesson.facts(live))
