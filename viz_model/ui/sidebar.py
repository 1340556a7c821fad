"""The shared sidebar: model and device pickers, rendered by app.py on every page."""

from __future__ import annotations

import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.device import available_devices, describe, resolve_device
from viz_model.ui import presenter, share
from viz_model.ui.models import DEFAULT_MODEL, available_models, load_model

MODEL_KEY, DEVICE_KEY = "model_key", "device_key"
SIDEBAR_KINDS = ("transformer",)  # the pages that read the sidebar's model run a TinyTransformer


def render() -> None:
    entries = available_models(SIDEBAR_KINDS)
    keys = [e.key for e in entries]
    by_key = {e.key: e for e in entries}
    share.bind("model", MODEL_KEY, choices=keys)
    share.bind("presenter", presenter.PRESENTER_KEY, bool)
    if st.session_state.get(MODEL_KEY) not in keys:
        st.session_state[MODEL_KEY] = DEFAULT_MODEL if DEFAULT_MODEL in keys else keys[0]
    with st.sidebar:
        st.selectbox("Model", keys, key=MODEL_KEY, format_func=lambda k: by_key[k].title,
                     help="Every page runs this model live.")
        st.caption(by_key[st.session_state[MODEL_KEY]].description)
        devices = ["auto", *available_devices()]
        if st.session_state.get(DEVICE_KEY) not in devices:
            st.session_state[DEVICE_KEY] = "auto"
        st.selectbox("Device", devices, key=DEVICE_KEY,
                     format_func=lambda d: f"auto → {describe(resolve_device('auto'))}" if d == "auto" else d)
        presenter.toggle()
    presenter.apply()


def current_model() -> Checkpoint:
    """The model chosen in the sidebar (cached, shared, read-only)."""
    entries = {e.key for e in available_models(SIDEBAR_KINDS)}
    key = st.session_state.get(MODEL_KEY, DEFAULT_MODEL)
    if key not in entries:
        key = next(iter(entries))
    return load_model(key, st.session_state.get(DEVICE_KEY, "auto"))


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
