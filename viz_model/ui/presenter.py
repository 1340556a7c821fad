"""Presenter mode: larger type and lines, colour-blind-safe high-contrast scales, less chrome."""

from __future__ import annotations

import streamlit as st

from viz_model.ui import share

PRESENTER_KEY = "presenter_mode"

# Static CSS (no user text in it): bigger base font, hide the toolbar chrome.
_CSS = """<style>
html { font-size: 20px; }
[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"] { display: none; }
.stMainBlockContainer, .block-container { padding-top: 1.5rem; max-width: 100%; }
/* a wider sidebar: its selects are text inputs that cannot wrap, and a model's full name must show ("Classroom
   recipe, no projections (Q = K = V = X)", not "Classroom model (RoP…") */
[data-testid="stSidebar"] { min-width: 26rem !important; }
[data-testid="stSidebar"] [data-testid="stSelectbox"] input { font-size: 0.9rem; }
</style>"""


def presenter_on() -> bool:
    return bool(st.session_state.get(PRESENTER_KEY, False))


def toggle() -> None:
    """In the shared sidebar; the key is rendered on every page, so the choice survives navigation."""
    st.toggle("Presenter mode", key=PRESENTER_KEY, **share.URL,
              help="Larger fonts and lines, high-contrast colour-blind-safe colours, less chrome: for a projector.")


def apply() -> None:
    if presenter_on():
        st.html(_CSS)
