"""Streamlit sections shared by the Position pages: live checks, optional shipped models, model views."""

from __future__ import annotations

import numpy as np
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.figures import position as figs
from viz_model.tokenizer import encode
from viz_model.ui import position as pos
from viz_model.ui.chart import show
from viz_model.ui.models import available_models, load_model
from viz_model.ui.sidebar import DEVICE_KEY, current_model


def verdict(error: float, tol: float, claim: str) -> None:
    """✓ with the measured error when the claim holds, ✗ otherwise."""
    if error <= tol:
        st.success(f"✓ {claim} (max error {error:.1e})")
    else:
        st.error(f"✗ {claim} — failed here: max error {error:.1e} (tolerance {tol:.0e})")


def model_with(encoding: str, preferred: tuple[str, ...]) -> tuple[Checkpoint | None, str]:
    """The sidebar model if it uses `encoding`, else the first shipped model in `preferred` that does."""
    current = current_model()
    if current.model.config.pos_encoding == encoding:
        return current, "the sidebar model"
    shipped = {e.key for e in available_models()}
    for key in preferred:
        if key in shipped:
            ckpt = load_model(key, st.session_state.get(DEVICE_KEY, "auto"))
            if ckpt.model.config.pos_encoding == encoding:
                return ckpt, f"the shipped model “{key}”"
    return None, ""


def token_id(ckpt: Checkpoint, word: str) -> int | None:
    enc = encode(ckpt.tokenizer, word)
    return enc.ids[0] if enc.ids and not enc.unknown else None


def same_token_two_positions() -> None:
    st.subheader("Same token, different position")
    ckpt, where = model_with("sinusoidal", ("enc-sinusoidal",))
    if ckpt is None:
        st.info("The shipped “enc-sinusoidal” model is not installed yet (and the sidebar model does not use "
                "sinusoidal encodings), so this view has no model to read. Pick a sinusoidal model in the sidebar.")
        return
    tid = token_id(ckpt, "the")
    if tid is None:
        st.info("This model's vocabulary has no “the”, so this view is skipped.")
        return
    vecs = pos.input_vectors(ckpt.model, tid, [0, 2])
    d = ckpt.model.config.d_model
    dims = np.arange(min(d, 64))
    st.markdown(f"What the first layer of {where} reads for **“the”** at positions 0 and 2: "
                f"its token embedding (×√d_model) plus the position's sinusoid. Same word, different input.")
    show(figs.vector_rows(vecs, dims, f"“the” at positions 0 and 2 (first {len(dims)} of {d} dims)"),
                    key="sinusoidal_same_token", name="same_token_two_positions")
    a, b = vecs["input at position 0"], vecs["input at position 2"]
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    st.metric("cosine similarity of the two inputs", f"{cos:.4f}", help="1 would mean identical directions.")
    table = pos.pe_numpy(3, d, 10000.0)
    err = float(np.abs((b - a) - (table[2] - table[0])).max())
    verdict(err, 1e-5, "the two inputs differ by exactly P_2 − P_0: the token part cancels")


def learned_vs_sinusoidal() -> None:
    st.subheader("Learned vs sinusoidal")
    ckpt, where = model_with("learned", ("enc-learned",))
    if ckpt is None:
        st.info("The shipped “enc-learned” model is not installed yet (and the sidebar model does not learn its "
                "positions), so there is no learned table to compare.")
        return
    learned = ckpt.model.pos_emb.weight.detach().double().cpu().numpy()  # (max_len, d)
    n, d = learned.shape
    st.markdown(f"{where.capitalize()} learned one vector per position (rows 0..{n - 1}); it has no row for "
                f"position {n}, so it cannot read longer texts. Cosine similarity of its rows, beside the "
                "sinusoidal table of the same size:")
    left, right = st.columns(2)
    with left:
        show(figs.similarity_heatmap(pos.cosine_similarity(learned), None, "learned positions",
                                                  "cosine"), key="sinusoidal_learned_sim")
    with right:
        show(figs.similarity_heatmap(pos.cosine_similarity(pos.pe_numpy(n, d, 10000.0)), None,
                                                   "sinusoidal positions", "cosine"), key="sinusoidal_sin_sim")
    show(figs.pe_heatmap(learned, title=f"The learned position table ({n} × {d})", name="learned"),
                    key="sinusoidal_learned_table", name="learned_position_table")
