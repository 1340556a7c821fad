"""Q, K and V: attention as a soft database lookup, and what sharing the projections costs, measured live."""

import streamlit as st

from viz_model.lessons.qkv import CLAIM_SENTENCES, MINIMAL_PAIRS, lesson_text
from viz_model.model_text import is_folder_model
from viz_model.ui import qkv as ui
from viz_model.ui import share
from viz_model.ui.models import CLASSROOM_MODEL, load_model
from viz_model.ui.sidebar import DEVICE_KEY, current_model
from viz_model.ui.widgets import sentence_input

st.title("Q, K and V")
st.markdown("Each token plays three roles: a **query** (what am I looking for?), a **key** (what can I be found "
            "by?) and a **value** (what do I hand over?). Separate projections W_Q, W_K, W_V let one vector play "
            "them differently. The shipped models below share them (Q = K, K = V) or drop them (raw X), with the "
            "same size, data, seed and steps: what changes is measured here, not asserted.")

ckpt = current_model()
if is_folder_model(ckpt):  # the lesson compares the app's own variants, all on the word tokenizer
    st.info(f"“{ckpt.metadata.get('name', 'This model')}” is a checkpoint from a model folder, with its own "
            "tokenizer; this page measures the app's own models, so the lookup runs on the shipped classroom model.")
    ckpt = load_model(CLASSROOM_MODEL, st.session_state.get(DEVICE_KEY, "auto"))
enc = sentence_input("qkv", ckpt, max_tokens=ui.MAX_T, default="The cat sat on the mat")
text = lesson_text(enc, st.session_state.get("qkv_text", ""))


def lookup() -> None:
    st.markdown("Attention is a **soft lookup** in a tiny database whose rows are the sentence's tokens: one query "
                "is compared with every key, and the answer is a blend of the values, weighted by the match.")
    ui.variant_note(ckpt)
    ui.lookup_view(ckpt, text)


def variants() -> None:
    st.markdown("The same sentence through the four shipped variants. With Q = K (or no projections at all) the "
                "score of *i* looking at *j* is the score of *j* looking at *i*: the matrix is **symmetric** and "
                "each token tends to match **itself** best (Reformer masks that out). Separate W_Q and W_K let "
                "*sat* look for a subject while *cat* looks for something else.")
    ui.variants_view(text)


def pairs() -> None:
    st.markdown("If K doubles as V, what a token is *found by* is also what it *hands over*: the lecture expects a "
                "blurry mix of roles, so *the cat sat* and *the mat sat* should give nearly the same output for "
                "*sat*. Measured on each variant:")
    ui.pairs_view()


def loss() -> None:
    st.markdown("Does sharing cost anything in prediction? The mean held-out loss per token on the classroom corpus "
                "(lower is better), recomputed now for each variant.")
    ui.loss_view()
    ui.train_link()


def claims() -> None:
    st.markdown(f"The lecture's claims (and Reformer's), each as a measurement with a stated tolerance, over "
                f"{len(CLAIM_SENTENCES)} sentences, every layer and head, and the {len(MINIMAL_PAIRS)} minimal pairs.")
    ui.claims_view()


# Only the open tab runs: the held-out loss (a few seconds, once per server) is measured only where it is shown.
TABS = {"Database lookup": lookup, "Four variants": variants, "Minimal pairs": pairs, "Held-out loss": loss,
        "Claims": claims}
share.show_tabs(TABS, key="qkv_tab")  # only the open tab runs
