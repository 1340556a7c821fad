"""RNN vs Transformer: why transformers train well, measured — sequential depth, gradients by distance, recall."""

import streamlit as st

from viz_model.ui import recurrence as ui
from viz_model.ui import share

st.title("RNN vs Transformer")
st.markdown("An RNN reads a sequence **one step at a time**, and its gradient travels back the same way, through "
            "one Jacobian per step; a transformer reaches every position **in one pass**, at most L layers away. "
            "Everything below is measured on this server, on torch's own `nn.RNN` / `nn.LSTM` and this app's "
            "transformer.")


def sequential() -> None:
    st.header("1 · Sequential dependency")
    st.markdown("How many operations must wait for the one before? That **graph depth** is what no number of "
                "cores can shorten.")
    ui.depth()
    st.markdown("#### Forward + backward time against T")
    st.markdown("An RNN, an LSTM and a transformer of about the same parameter count, timed on one training batch "
                "as T doubles. On log–log axes a power law is a straight line whose slope is the exponent.")
    ui.timing()


def gradients() -> None:
    st.header("2 · Vanishing and exploding gradients are a product of Jacobians")
    st.markdown("‖∂ℓ/∂x_t‖: how much the loss at the last position changes with the input embedding t steps back, "
                "for the three models trained on the recall task. A straight line on the log axis is geometric: "
                "the same factor every step.")
    distance = ui.distance_slider()
    ui.gradient_by_distance(distance)
    st.markdown("#### The trained RNN's W_hh")
    st.markdown("Backpropagation through time multiplies one Jacobian ∂h_t/∂h_(t−1) = diag(tanh′)·W_hh per step. "
                "Rescale W_hh on a copy of the trained RNN and watch the gradient and the step Jacobians:")
    ui.trained_rnn(distance)
    st.markdown("#### An RNN in its linear regime")
    st.markdown("Where tanh′ = 1 the Jacobian is W_hh alone, so ‖W_hh‖₂ sets the rate: below 1 the gradient "
                "dives, above 1 it explodes, with slope ln(gain) on the log axis.")
    ui.linear_regime()


def task() -> None:
    st.header("3 · The task where that matters")
    st.markdown("*Recall*: a noun, some filler letters, a ':' — and the model must name the noun. The distance is "
                "how far back the noun is. Accuracy of the three trained models at each distance:")
    ui.accuracy()


# Each claim in its own tab; only the open one runs (the timing and the gradients are not computed for tabs
# nobody is looking at).
TABS = {"1 · Sequential dependency": sequential, "2 · Gradient by distance": gradients,
        "3 · Recall by distance": task}
share.show_tabs(TABS, key="recurrence_tab")  # only the open tab runs
