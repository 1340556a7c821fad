"""Encoder–decoder: a translator whose three attention kinds, alignment and encoder reuse are measured live."""

from functools import partial

import streamlit as st

from viz_model.ui import encoder_decoder as ui
from viz_model.ui import share

st.title("Encoder–decoder")
st.markdown("The 2017 transformer translates: an **encoder** reads the whole source in both directions, a "
            "**decoder** writes the target one word at a time, and **cross-attention** lets each target position "
            "look up the source (queries from the decoder, keys and values from the encoder). The model below was "
            "trained on a toy language whose word alignment is known: every word in Pig Latin, adjectives after "
            "their noun, each verb at the end of its clause, and a plural noun as two words (*dogs* → *ogday ka*).")

ckpt = ui.translator()
cfg = ckpt.model.config
st.caption(f"{(ckpt.metadata or {}).get('title', 'encoder-decoder')}: {cfg.n_encoder_layers} encoder and "
           f"{cfg.n_layers} decoder layers × {cfg.n_heads} heads, d_model {cfg.d_model}, "
           f"{ckpt.model.num_params():,} parameters, reads at most {cfg.max_len} tokens.")

src = ui.source_input(ckpt)
settings = ui.controls()
steps = ui.visible_steps(ui.full_run(ckpt, src, settings), src, settings)
ui.translation(ckpt, src, steps, cfg.max_len)

st.header("Inside the translator")
share.show_tabs({label: partial(view, ckpt, src, steps, settings) for label, view in ui.TABS.items()},
                key="ed_tab")  # only the open tab computes
