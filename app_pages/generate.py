"""Generate: from next-token probabilities to text, one visible step at a time."""

from functools import partial

import streamlit as st

from viz_model import generate as G
from viz_model.lessons.classview import HIDDEN_TEXT
from viz_model.ui import generate as ui
from viz_model.ui import share, widgets
from viz_model.ui.sidebar import current_model

st.title("Generate")
st.markdown("A decoder writes text **one token at a time**: it turns the prefix into a probability for every word "
            "in its vocabulary, picks one (greedy, or sampled after temperature / top-k / top-p), appends it and "
            "repeats. Everything below is computed live on the model in the sidebar.")

ckpt = current_model()
model, cfg = ckpt.model, ckpt.model.config
if not cfg.causal:
    st.warning("This model attends in both directions (an encoder): it cannot write left to right. "
               "Pick a decoder model in the sidebar.")
    st.stop()
enc = ui.prompt_input(ckpt)
ui.refuse_ended_prompt(ckpt, enc.ids)  # never continue a text past its end token
end = ui.end_name(ckpt)  # the model's own end token: "<eos>", "<|endoftext|>", "</s>"...
settings = ui.controls(cfg, cfg.vocab_size, end)
all_steps = ui.full_run(ckpt, enc.ids, settings)
steps = ui.visible_steps(all_steps, enc.ids, settings)

seq = enc.ids + [v.token_id for v in steps]
widgets.answer_line("generate_output", ckpt.tokenizer.decode(seq, skip_special_tokens=False),  # #39: hidden in class
                    lambda t: st.code(t, language=None, wrap_lines=True),
                    hidden=f"{ckpt.tokenizer.decode(enc.ids, skip_special_tokens=False)} … ({HIDDEN_TEXT})")
with st.container():  # the stop note comes and goes; its slot stays, so the widgets below keep their place
    if steps and steps[-1].stop_reason:
        reason = G.stop_message(steps[-1].stop_reason, cfg.max_len).replace("<eos>", end)
        (st.warning if steps[-1].stop_reason == "context" else st.caption)(f"Stopped: {reason}")
if not steps:
    st.stop()

st.header("1 · The next-token distribution")
ui.distribution(steps, settings)

st.header("2 · Sequence probability = product of next-token probabilities")
table = ui.running_table(steps)  # Π p so far is text written from Σ log p: a float product underflows to 0
st.dataframe(table.iloc[:0] if widgets.answer_hidden("generate_table") else table, hide_index=True,  # #39
             key="generate_table", column_config={
    c: st.column_config.NumberColumn(format="%.4f") for c in ("p(token | prefix)", "log p", "Σ log p so far")})
widgets.answer_line("generate_sequence", ui.sequence_sentence(ckpt, enc, steps))

st.header("3 · Where the new token looks")
st.markdown("Each row is the attention of the position that predicts the next token, over everything before it. "
            "One row per step: the **causal triangle** builds up as the text grows.")
ui.attention_of_steps(cfg, enc.tokens, len(enc.ids), steps)

share.show_tabs({label: partial(view, ckpt, enc.ids, settings) for label, view in ui.TABS.items()},
                key="generate_tab")  # only the open tab computes
