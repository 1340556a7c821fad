"""The lecture panel's handout (#39, item 8): viz_model.handout builds the file without Streamlit; here it is built
once per lecture, model and address for the whole server (ui.cache.shared_results, one at a time), with a progress
bar while it is, then offered for download. `python -m viz_model.ui.handout LECTURE OUT.html` is the same command as
`python -m viz_model.handout`. Streamlit is imported inside the button, so the command never loads it."""

from __future__ import annotations

import sys
from urllib.parse import urlsplit

from viz_model.lectures import Lecture

ASKED = "_handout_asked"  # session_state: the (lecture, model) whose handout this session asked for
HELP = ("One HTML file with every step's narrative and its charts, computed now on the lecture's model: it opens in "
        "any browser, offline, with no server.")


def button(name: str, lec: Lecture) -> None:
    """A button that builds this lecture's handout (a progress bar, about a second a step), then its download."""
    import streamlit as st

    from viz_model.handout.build import build_handout
    from viz_model.handout.views import Models
    from viz_model.ui.cache import input_key, model_id, shared_results
    from viz_model.ui.models import DEFAULT_MODEL, load_model
    from viz_model.ui.sidebar import DEVICE_KEY, MODEL_KEY, current_model

    load = lambda key: load_model(key, st.session_state.get(DEVICE_KEY, "auto"))  # noqa: E731
    key = lec.model or st.session_state.get(MODEL_KEY, DEFAULT_MODEL)
    ckpt = load(lec.model) if lec.model else current_model()
    app_url = _app_url(st.context.url)
    ident = input_key(name, repr(lec), model_id(ckpt), app_url)
    if st.session_state.get(ASKED) != ident:
        slot = st.empty()  # the button goes once it is clicked: the progress, then the download, take its place
        if not slot.button("Make the handout", key="lecture_handout", icon=":material/description:", help=HELP):
            return
        slot.empty()
        st.session_state[ASKED] = ident
    store = shared_results("handouts", size=8)  # kept for everyone on the server, one made at a time
    text = store.get(ident)
    if text is None:
        with store.turn("Another handout is being made on this server; try again in a moment.") as mine:
            if not mine:
                return
            bar = st.progress(0.0, text="Computing the handout…")

            def show(done: int, total: int, title: str) -> None:
                bar.progress(done / total, text=f"Computing step {done + 1} of {total}: {title}")

            text = build_handout(lec, Models(key, ckpt, load), lecture_name=name, app_url=app_url,
                                 progress=show).encode("utf-8")
            store.put(ident, text)
            bar.empty()
    st.download_button("Download the handout (HTML)", data=text, file_name=f"{name}-handout.html",
                       mime="text/html", key="lecture_handout_file", on_click="ignore", icon=":material/download:",
                       help=HELP)


def _app_url(url: str | None) -> str:
    """Where this app runs, for the handout's links: the scheme and host of the page the instructor opened."""
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://localhost:8501"


if __name__ == "__main__":
    from viz_model.handout.build import main

    sys.exit(main())
