"""The shared sidebar: model and device pickers, rendered by app.py on every page."""

from __future__ import annotations

import streamlit as st

from viz_model.checkpoint import TRANSFORMER, Checkpoint
from viz_model.device import available_devices, describe, resolve_device
from viz_model.ui import presenter, share
from viz_model.ui.models import DEFAULT_MODEL, RANDOM_MODEL, available_models, load_model

MODEL_KEY, DEVICE_KEY = "model_key", "device_key"
SIDEBAR_KINDS = (TRANSFORMER,)  # the pages that read the sidebar's model run a TinyTransformer
_LAST_GOOD = "_model_last_good"   # the model shown before a refused pick (a folder that cannot be loaded)
_REFUSED = "_model_refused"       # that refused pick, for its message


def lesson_links(sections: dict[str, list]) -> None:
    """The lessons, by section, as links (app.py says why not Streamlit's own menu). Each section is a labelled
    group: its name in bold, then its pages; the open page is marked by Streamlit (aria-current)."""
    for section, pages in sections.items():
        st.markdown(f"**{section}**")
        for pg in pages:
            st.page_link(pg)
    st.divider()


def following_note() -> None:
    """In place of the lesson links while a student follows the instructor (app.py): the page is the instructor's."""
    st.caption("You follow the instructor, who picks the page. To choose a page yourself, switch off “Follow the "
               "instructor” under Class, below.")
    st.divider()


def render() -> None:
    entries = available_models(SIDEBAR_KINDS)
    keys = [e.key for e in entries]
    by_key = {e.key: e for e in entries}
    usable = [e.key for e in entries if e.problem is None]
    # Only listed names are accepted, from the picker or from a link's ?model_key= (never a path). A refused pick
    # (a folder that cannot be loaded) goes back to the model shown before; a link's is caught after the picker has
    # taken it (the link wins on a first load), then the page runs again with the model shown before.
    if MODEL_KEY in st.session_state and st.session_state[MODEL_KEY] not in usable:
        st.session_state[_REFUSED] = st.session_state[MODEL_KEY]
        last = st.session_state.get(_LAST_GOOD)
        fallback = DEFAULT_MODEL if DEFAULT_MODEL in usable else usable[0]
        st.session_state[MODEL_KEY] = last if last in usable else fallback
    refused = by_key.get(st.session_state.pop(_REFUSED, None))
    with st.sidebar:
        default = keys.index(DEFAULT_MODEL) if DEFAULT_MODEL in usable else keys.index(usable[0])
        picked = st.selectbox("Model", keys, index=default, key=MODEL_KEY, format_func=lambda k: by_key[k].title,
                              **share.URL, help="The pages run this model live; one that needs its own (an "
                                                "encoder, a translator) names it. Folders: the instructor's choice.")
        if picked not in usable:
            st.rerun()
        st.session_state[_LAST_GOOD] = picked
        if refused is not None:
            st.error(f"“{refused.key}” cannot be used: {refused.problem}")
        st.caption(by_key[st.session_state[MODEL_KEY]].description)
        devices = ["auto", *available_devices()]
        if st.session_state.get(DEVICE_KEY, "auto") not in devices:
            st.session_state[DEVICE_KEY] = "auto"
        st.selectbox("Device", devices, key=DEVICE_KEY, **share.URL,
                     format_func=lambda d: f"auto → {describe(resolve_device('auto'))}" if d == "auto" else d)
        presenter.toggle()
    presenter.apply()


def current_model() -> Checkpoint:
    """The model chosen in the sidebar (cached, shared, read-only). A model folder that fails to load (too large
    for the free memory, a broken weight) says why, and the page runs the default model instead."""
    entries = {e.key: e for e in available_models(SIDEBAR_KINDS) if e.problem is None}
    key = st.session_state.get(MODEL_KEY, DEFAULT_MODEL)
    if key not in entries:
        key = DEFAULT_MODEL if DEFAULT_MODEL in entries else next(iter(entries))
    device = st.session_state.get(DEVICE_KEY, "auto")
    try:
        return load_model(key, device)
    except ValueError as e:
        fallback = DEFAULT_MODEL if DEFAULT_MODEL in entries else RANDOM_MODEL
        if not entries[key].folder or key == fallback:
            raise
        st.error(f"“{key}” could not be loaded: {e} This page uses “{fallback}” instead.")
        return load_model(fallback, device)


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
