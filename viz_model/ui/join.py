"""The class's join line (#39, item 4): the class link with an address the students' devices can open (the server's
network address when the instructor opened the app on this machine: lessons.classview.reachable_link), and a QR code
of exactly that link (segno: pure Python, writes the PNG itself)."""

from __future__ import annotations

import base64
import io
from urllib.parse import urlsplit

import segno
import streamlit as st

from viz_model.lessons import classview
from viz_model.runtime import class_mode as rt
from viz_model.ui.cache import cached

QR_SCALE, QR_BORDER = 6, 2  # pixels per module; quiet-zone modules (scanners read a 2-module zone on a screen)


def opened_url() -> str:
    """The address the instructor's browser opened this page at ("" where Streamlit does not say, as in AppTest)."""
    return getattr(st.context, "url", None) or ""


def link(code: str) -> str:
    """The class link to show: from the address of the page the leader is on, made reachable."""
    opened = rt.class_link(opened_url(), st.session_state.get(rt.PAGE), code)
    configured = (st.get_option("browser.serverAddress"), st.get_option("server.address"))
    return classview.reachable_link(opened, configured=configured, lan=classview.lan_ip())


def qr_png(text: str) -> bytes:
    """A QR code (never a Micro QR: phones do not read those) of `text` as PNG bytes."""
    buf = io.BytesIO()
    segno.make_qr(text).save(buf, kind="png", scale=QR_SCALE, border=QR_BORDER)
    return buf.getvalue()


def qr_data_url(text: str) -> str:
    """The QR code of `text` inline, as a data: URL. Not bytes handed to st.image: those become a file of the session
    on Streamlit's media server, which a leader's next run may drop before the browser has fetched it (a 404 in a
    lecture's quick Back/Next); an inline image has nothing to fetch."""
    return "data:image/png;base64," + base64.b64encode(qr_png(text)).decode("ascii")


def line(code: str) -> None:
    """The join line under the class code: the link, a note when it names this computer only, its QR code."""
    url = link(code)
    st.markdown(classview.JOIN_TEXT.format(link=f"[{url}](/?class={code})"))
    if urlsplit(url).netloc and classview.is_loopback(urlsplit(url).hostname):
        st.caption(classview.LOOPBACK_NOTE)
    if url.startswith(("http://", "https://")):
        st.image(cached("join_qr", (url,), lambda: qr_data_url(url)), caption=classview.QR_CAPTION, width=220,
                 output_format="PNG")  # never JPEG: a blurred module misreads
