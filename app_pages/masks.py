"""Masks: what a mask really does, applied to the live model, with every claim measured."""

import streamlit as st

from viz_model import masks
from viz_model.model_text import pad_token
from viz_model.tokenizer import PAD
from viz_model.ui import masks as ui
from viz_model.ui import share
from viz_model.ui.errors import section
from viz_model.ui.sidebar import current_model
from viz_model.ui.widgets import layer_head, sentence_input

st.title("Masks")
st.markdown("A mask decides **which keys each query may read**. It is added to the scores as 0 or −∞ before the "
            "softmax, so a blocked key gets exactly zero weight. Everything below runs the model in the sidebar.")

ckpt = current_model()
cfg = ckpt.model.config
# A typed <pad> stays the padding token here (the Padding mask hides it); any other special typed is plain text.
enc = sentence_input("masks", ckpt, max_tokens=ui.MAX_GALLERY_T, default="The cat sat on the mat", specials=(PAD,))
ids, tokens, T = enc.ids, enc.tokens, len(enc.ids)

st.header("Mask gallery")


@section("the mask gallery")  # switching the mask, layer or head reruns only this part of the page
def gallery() -> None:
    kind = st.segmented_control("Mask", list(ui.GALLERY), default="causal", format_func=ui.GALLERY.get,
                                key="masks_kind", required=True, **share.URL)
    c1, c2, _ = st.columns([1, 1, 2])
    layer, head = layer_head("masks", cfg.n_layers, cfg.n_heads, where=(c1, c2))
    allowed = ui.gallery_mask(kind, T, "masks", ids, *pad_token(ckpt), tokens=tokens)
    model_mask = masks.short_name(cfg.mask)  # the kind in the model's config
    if kind not in (cfg.mask, "padding"):
        st.caption(f"This model was trained with a {model_mask} mask; under another mask it runs off-distribution. "
                   "The mask mechanics (exact zeros, rows summing to 1) hold for any mask.")
    ui.gallery(ckpt, ids, tokens, kind, allowed, layer, head)


gallery()


def padding() -> None:
    st.subheader("Padding: a batch of unequal sentences")
    st.markdown(f"The lecture's batch: *{ui.PAD_BATCH[0]}* and *{ui.PAD_BATCH[1]}*. The short sentence is filled "
                f"with `{pad_token(ckpt)[1]}`; the **key mask** hides pads from every query and the **loss mask** "
                "drops pad targets.")
    ui.padding(ckpt)


def causal_vs_sequential() -> None:
    st.subheader("Causal ≠ sequential")
    st.markdown("Training runs the whole sentence **once**. The causal mask makes position *t* blind to later "
                "tokens, so its output equals running the prefix 0..*t* alone. Measured: the sentence once, then "
                "each prefix separately.")
    ui.prefix_runs(ckpt, ids, tokens)


def dependency_map() -> None:
    st.subheader("Dependency map (autograd)")
    st.markdown("How much does the output at position *t* change when the input embedding at *s* changes? "
                "Each cell is the Jacobian norm ‖∂h_t/∂e_s‖ computed by autograd through the whole model.")
    if T > ui.MAX_DEP_T:
        st.info(f"The dependency map uses the first {ui.MAX_DEP_T} tokens (one backward pass per output number).")
    ui.dependency(ckpt, ids, tokens)


def mask_vs_position() -> None:
    st.subheader("A mask restricts access; a position signal encodes location")
    st.markdown(f"*{ui.PERMUTATION[0]}* vs *{ui.PERMUTATION[1]}*: the same tokens in another order. Distance "
                "between the final vectors of **report** in the two sentences, for models with each kind of "
                "position signal.")
    ui.permutation()


# Each claim in its own tab; only the open one runs (the prefix runs and the Jacobian are not recomputed for tabs
# nobody is looking at).
TABS = {"Padding": padding, "Causal ≠ sequential": causal_vs_sequential, "Dependency map": dependency_map,
        "Mask vs position": mask_vs_position, "Check yourself": ui.quiz}
st.header("What a mask does, and what it does not")
label, tab = share.tabs(list(TABS), key="masks_tab")
with tab:
    TABS[label]()
