"""Encoder: a masked-LM encoder fills in the blanks from both sides; 'the bank by the river' against a decoder."""

import streamlit as st

from viz_model.lessons import encoder as lesson
from viz_model.tokenizer import MASK
from viz_model.ui import encoder as ui
from viz_model.ui import share
from viz_model.ui.widgets import sentence_input

st.title("Encoder")
st.markdown("An **encoder** is a transformer without the causal mask: every token attends to every other, before "
            "and after it. It is trained like BERT, by hiding words behind `<mask>` and predicting them from both "
            "sides. Everything below runs the encoder you pick live.")
st.caption("What an encoder is for: its output vectors have read the whole sentence, so it suits tasks that label "
           "or compare text that is already there — classification, tagging each word, similarity search — but "
           "it cannot write text one word after another, which is why chat models are decoders. This app only "
           "trains it to fill in blanks.")

key, ckpt = ui.pick_encoder()


def fill_in() -> None:
    ui.held_out_examples(ckpt)
    enc = sentence_input("encoder", ckpt, max_tokens=ui.word_limit(ckpt), default="The cat sat on the mat",
                         specials=(MASK,))  # a typed <mask> is a blank to fill; any other special is plain text
    st.caption(lesson.reads_caption(ckpt.tokenizer))
    ids, words, pieces = ui.words_of(enc, ckpt)
    picked = ui.mask_picker(words, pieces)
    blanks = lesson.blanks(ckpt.tokenizer, ids, words, pieces, picked)
    if not blanks.answers:
        st.info("Nothing is hidden yet: click one or more words above, or type `<mask>` in the sentence, to see "
                "what the encoder would put there.")
        return
    st.code(blanks.text, language=None, wrap_lines=True)
    run = ui.masked_run(ckpt, blanks)
    st.header("What the encoder would write in each blank")
    ui.fill_ins(ckpt, run, blanks)
    st.header("Bidirectional attention")
    st.markdown("Every head on the masked sentence. The **solid** outline is a `<mask>`'s row (what it reads), the "
                "**dotted** one its column (who reads it). No cell is greyed out: nothing is masked away.")
    ui.attention(ckpt, run)


def bank() -> None:
    dec_key, dec = ui.decoder(key)
    st.markdown(f"*{lesson.BANK}*: to decide which **bank** this is, the model needs **river**, which comes later. The "
                f"same sentence on the encoder and on the shipped causal decoder “{dec_key}”, which reads it with the "
                "same tokenizer:")
    if dec is None:
        st.warning(f"The shipped decoder “{dec_key}” is not installed, so there is nothing to compare with.")
        return
    ui.look_ahead(ckpt, dec, dec_key)


TABS = {"Fill in the blanks": fill_in, "The bank by the river": bank, "Why masked LM?": ui.why_mlm,
        "Held-out metrics": lambda: ui.metrics(ckpt)}
share.show_tabs(TABS, key="encoder_tab")  # only the open tab runs
