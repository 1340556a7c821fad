"""Start: what the app is and what to do, one sentence through the model first; the model and its quality below."""

import pandas as pd
import streamlit as st

from viz_model.data import TASK_LABELS
from viz_model.device import describe
from viz_model.lessons import start as lesson
from viz_model.model_text import is_folder_model, start_token, uses_bos
from viz_model.ui import class_mode, lecture, share
from viz_model.ui import start as start_view
from viz_model.ui.sidebar import current_model
from viz_model.ui.widgets import (
    FOLDER_VIEW_TOKENS,
    MAX_CHARS,
    encode_text,
    page_link,
    sentence_text,
    token_chips,
    unknown_notice,
)

st.title("Attention Lab")
st.markdown(lesson.INTRO)
if not class_mode.following():  # a follower's sidebar has no page links, and the instructor picks the lecture
    lecture.start_link()  # #39: the guided lecture, beside exploring

ckpt = current_model()
model, cfg = ckpt.model, ckpt.model.config
folder = is_folder_model(ckpt)

# The first screen: a sentence and its attention (the model card and its measured quality come after).
text = sentence_text(st, "Type a sentence", "The cat sat on the mat", "start_text", MAX_CHARS)  # #39: carried
start = start_token(ckpt)
if start is None:
    bos = False
    st.caption("This model's tokenizer names no start token, so sentences go in as typed.")
else:
    how = (", as its tokenizer does" if uses_bos(ckpt) else " (its tokenizer does not)") if folder else \
        ", as in training"
    bos = st.toggle(f"Start with `{start[1]}`{how}",
                    value=uses_bos(ckpt), key="start_bos", **share.URL,
                    help="Its tokenizer puts this token in front of every text." if folder and uses_bos(ckpt) else
                    "Its tokenizer does not put it in front by itself; switch it on to see what changes." if folder
                    else "The shipped models saw a <bos> token in front of most training sentences; many heads "
                         "park spare attention on it.")
limit = min(cfg.max_len, FOLDER_VIEW_TOKENS) if folder else cfg.max_len
enc = encode_text(ckpt, text, max_len=limit, bos=bos)
with st.container():  # the notes come and go; their slot stays, so the pickers below keep their place (share.in_slot)
    if enc.truncated:
        st.info(f"Your text has {enc.n_tokens_total} tokens; this view reads at most {limit}, "
                "so only the first ones are shown.")
    if enc.unknown and not folder and len(enc.ids) > int(bos):
        unknown_notice(enc.unknown)
if len(enc.ids) > int(bos):
    token_chips(enc)
    start_view.attention_view(ckpt, enc)
else:  # the layer and head are not drawn: they keep their values (persist_state)
    st.warning("Type at least one word to see its tokens and attention.")

st.subheader("Where to next")
for page, label, icon in lesson.NEXT_PAGES:
    page_link(page, label, icon)

st.header("The model")
card = start_view.model_card(ckpt, describe(model.device))
rows = [list(card)[:6], list(card)[6:]] if folder else [list(card)]  # a real model's card: two rows that fit
for names in rows:
    st.dataframe(pd.DataFrame({"": [card[n] for n in names]}, index=names, dtype=str).T, hide_index=True)
meta = ckpt.metadata
if folder:
    st.caption(f"A {meta.get('architecture') or meta.get('model_type')} read from the instructor's model folder "
               f"“{meta.get('name')}”: real weights, converted once and shared by everyone, read-only. Every page "
               "runs it live; views of every head read at most "
               f"{min(cfg.max_len, FOLDER_VIEW_TOKENS)} tokens.")
if isinstance(meta.get("heldout"), dict):
    start_view.english_quality(ckpt)
elif meta.get("heldout_loss") is not None:
    task = TASK_LABELS.get(meta.get("task"), meta.get("task", "?"))
    st.caption(f"Trained for {meta.get('steps', '?')} steps on {task}; "
               f"held-out loss {meta['heldout_loss']:.3f}.")
