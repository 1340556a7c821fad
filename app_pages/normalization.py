"""Normalization: which axis LayerNorm, BatchNorm and RMSNorm normalise, why transformers pick a per-token norm,
what the residual path does for the gradient, pre- vs post-norm, and the batch dimension — measured live."""

import streamlit as st

from viz_model.ui import normalization as ui
from viz_model.ui import share
from viz_model.ui.sidebar import current_model
from viz_model.ui.widgets import sentence_input

st.title("Normalization")
st.markdown("Transformers normalise **each token over its own features** and add every block's output to an "
            "**untouched residual stream**. This page measures why: what each norm normalises, the four reasons "
            "BatchNorm does not fit sequences, what the residual path does for the gradient, where the norm sits, "
            "and why the samples of a batch never meet.")


def axes() -> None:
    st.markdown("A batch of activations is a tensor **(N, T, d_model)**: N samples, T positions, d_model features. "
                "**LayerNorm** takes a mean and a variance per token, over its d_model features; **BatchNorm** per "
                "feature, over all N × T tokens of the batch; **RMSNorm** (Llama) divides each token by its root "
                "mean square, without subtracting the mean.")
    ui.axes_view()


def reasons() -> None:
    st.markdown("The lecture gives four reasons to prefer a per-token norm for sequences. Each one measured on the "
                "same random batch (change it in the widgets):")
    ui.reasons_view()


def residuals() -> None:
    st.markdown("A block computes x + F(x), so its Jacobian is **I + ∂F/∂x**: the gradient always has the identity "
                "to flow back through. Without the residual it is ∂F/∂x alone, multiplied over every block. The "
                "same 12-block stack with and without x + F(x), gradients per block at initialisation, then a "
                "short training run of each.")
    ui.residual_view()


def placement() -> None:
    st.markdown("**Post-norm** (the 2017 Transformer) normalises after the residual sum: x ← LN(x + F(x)). "
                "**Pre-norm** (GPT-2 onwards) normalises only the block's input: x ← x + F(LN(x)), leaving the "
                "bypass untouched. The lecture says post-norm needs learning-rate warm-up and pre-norm does not. "
                "Four short runs, same seed and batches:")
    ui.placement_view()


def batch() -> None:
    st.markdown("Attention runs on **(N, H, T, d_k)** tensors: every sample and every head gets its own T × T "
                "matrix, and nothing in the model mixes samples (the norms are per token). The loss is the mean "
                "over every scored position of every sample. On the sidebar's model:")
    ckpt = current_model()
    enc = sentence_input("norm", ckpt, max_tokens=ui.MAX_BATCH_T, default="The cat sat on the mat")
    ui.batch_view(ckpt, enc)


# Only the open tab runs: the training runs and the model trace happen only where they are looked at.
TABS = {"Which axis": axes, "Four reasons": reasons, "Residual connections": residuals,
        "Pre- vs post-norm": placement, "The batch dimension": batch}
share.show_tabs(TABS, key="norm_tab")  # only the open tab runs
