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
/* WCAG AAA (7:1) for a projector (#29): captions are drawn at 60 % opacity (4.96:1 on white); at 80 % they are
   10.4:1 on white and 9.1:1 in the sidebar, still a step lighter than the body text */
[data-testid="stCaptionContainer"] { opacity: 0.8; }
label[data-testid="stWidgetLabel"][disabled], label[data-testid="stWidgetLabel"][disabled] * {
  color: rgba(14, 17, 23, 0.8); }
</style>"""

# Always on. A disabled widget's label (Temperature under greedy decoding) is drawn at 40 % of the text colour,
# 2.6:1, and no theme setting reaches it. WCAG exempts inactive controls, but a student still has to read which
# setting is off; at 60 % (the captions' 4.96:1) it stays lighter than an active label. Static CSS, no user text.
# Keyboard focus is always visible (#29): Streamlit marks a focused link, button or box by a faint tint or a border
# shade at most (its page links and table toolbars by nothing), so every focused element gets the same ring: blue,
# 6.1:1 on white and 5.4:1 in the sidebar (WCAG asks 3:1), apart from the red that marks picked options; drawn
# inside text boxes and tables, which clip it.
_READABLE_CSS = """<style>
label[data-testid="stWidgetLabel"][disabled], label[data-testid="stWidgetLabel"][disabled] * {
  color: rgba(14, 17, 23, 0.6); }
:focus-visible { outline: 3px solid #1F5FBF !important; outline-offset: 2px !important; }
input:focus-visible, textarea:focus-visible, canvas:focus-visible { outline-offset: -3px !important; }
/* a heading's own link shows only on hover; on focus too */
a[href^="#"]:focus-visible { opacity: 1 !important; transition: none !important; }
/* a chart's toolbar (Plotly's modebar) and a table's (Streamlit's) show only on hover; on focus too */
.js-plotly-plot .modebar:focus-within, [data-testid="stElementToolbar"]:focus-within { opacity: 1 !important; }
/* On a phone (#43) Plotly's modebar sits over the chart's title, and touch shows it at every tap. Its config is per
   chart, set on the server, which does not know the screen's width, and Streamlit has no option for it: so it goes
   below 640 px by CSS. Each chart's Export menu and Streamlit's own fullscreen button still do what it did. */
@media (max-width: 640px) { .js-plotly-plot .modebar-container { display: none !important; } }
/* On a phone (#42) st.table, which has no wrap option, scrolled a table of several columns inside a box that takes no
   keyboard focus (axe: scrollable-region-focusable, serious) and hid its last columns; st.page_link and st.button,
   which have none either, cut a long label at the screen's edge. Below 640 px a table's cells may break inside a word
   or a number and a link's or button's label wraps, so all of them fit the width. */
@media (max-width: 640px) {
  [data-testid="stTable"] table { font-size: 0.8rem; }
  [data-testid="stTable"] :is(th, td, th *, td *) { white-space: normal; overflow-wrap: anywhere !important; }
  [data-testid="stMain"] [data-testid="stPageLink-NavLink"] *,
  [data-testid="stMain"] [data-testid="stButton"] button * { white-space: normal !important; }
}
</style>"""


def presenter_on() -> bool:
    return bool(st.session_state.get(PRESENTER_KEY, False))


def toggle() -> None:
    """In the shared sidebar; the key is rendered on every page, so the choice survives navigation."""
    st.toggle("Presenter mode", key=PRESENTER_KEY, **share.URL,
              help="Larger fonts and lines, high-contrast colour-blind-safe colours, less chrome: for a projector.")


def apply() -> None:
    st.html(_READABLE_CSS + (_CSS if presenter_on() else ""))
