"""Shareable views: a page's main settings live in the URL (?layer=1&head=2), so a link opens that view.

Pages call `bind(...)` before creating the widget: it seeds the widget from the link. app.py calls `new_page(...)`
before the page and `publish()` after it, which sends the whole URL in one message. A page that ends early calls
`share.stop()` instead of st.stop(), so its URL is published first (after st.stop() nothing more can be sent).
Invalid values in a link fall back to the default with a notice, never an error.

Bound settings are also remembered per session: Streamlit drops a widget's value when its page is left, so
without this a student coming back to the Explorer would find the sentence box empty and the view reset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

_SEEN = "_url_seen"        # {param: raw value already applied}, so a link is applied once, not on every rerun
_BOUND = "_url_bound"      # params bound during this run: {param: widget key}
_NOTICES = "_url_notices"  # messages about ignored link values
_PAGE = "_url_page"        # the page of the previous run: leaving it drops its parameters
_KEPT = "_url_kept"        # {widget key: last value}: what a bound widget showed, restored on coming back
_PUBLISHED = "_url_published"  # set by stop(): this run's URL is out already


@dataclass(frozen=True)
class Param:
    name: str                         # the name in the URL
    key: str                          # the widget key in session_state
    cast: Callable[[str], Any] = str
    choices: Iterable[Any] | None = None
    lo: float | None = None
    hi: float | None = None
    fmt: Callable[[Any], str] = str


def _parse(p: Param, raw: str) -> Any:
    value = p.cast(raw)
    if not _allowed(p, value):
        raise ValueError
    return value


def _allowed(p: Param, value: Any) -> bool:
    if p.choices is not None and value not in list(p.choices):
        return False
    return not ((p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi))


def _bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError


def bind(name: str, key: str, cast: Callable[[str], Any] = str, *, choices=None, lo=None, hi=None,
         fmt: Callable[[Any], str] = str) -> None:
    """Seed session_state[key] from ?name= (once per distinct link value), or else from the value it had when
    the student left this page, and mirror it back into the URL."""
    p = Param(name, key, _bool if cast is bool else cast, choices, lo, hi, fmt)
    st.session_state.setdefault(_BOUND, {})[name] = p
    raw = st.query_params.get(name)
    seen = st.session_state.setdefault(_SEEN, {})
    kept = st.session_state.setdefault(_KEPT, {})
    if raw is not None and seen.get(name) != raw:
        seen[name] = raw
        try:
            st.session_state[key] = _parse(p, raw)
        except (ValueError, TypeError):
            st.session_state.setdefault(_NOTICES, []).append(
                f"The link's value {raw[:40]!r} for “{name}” is not valid here, so the default is used.")
    elif key not in st.session_state and key in kept and _allowed(p, kept[key]):
        st.session_state[key] = kept[key]  # back on this page (another model may have fewer layers: checked)
    if key in st.session_state:
        kept[key] = st.session_state[key]
        _write(name, _format(p, st.session_state[key]))


def _format(p: Param, value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else p.fmt(value)


def _write(name: str, raw: str) -> None:
    """Record the URL value; a full run sends the whole URL once, in publish(). Each st.query_params write is a
    message the browser turns into a history.pushState (a page switch wrote ~18: 96 ms of the browser's time).
    A fragment run never reaches publish(), so it writes at once."""
    st.session_state.setdefault(_SEEN, {})[name] = raw
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run and st.query_params.get(name) != raw:
        st.query_params[name] = raw


def new_page(page_id: str) -> None:
    """Called before the page runs, every run: after navigating, the previous page's parameters leave the URL."""
    st.session_state.pop(_PUBLISHED, None)  # a flag of an earlier run (if st.stop() ended it before publish())
    previous = st.session_state.get(_PAGE)
    st.session_state[_PAGE] = page_id
    if previous is None or previous == page_id:
        return
    seen = st.session_state.get(_SEEN, {})
    current = st.query_params.to_dict()
    remaining = {n: v for n, v in current.items() if seen.get(n) != v}  # ours go; a freshly pasted link stays
    if remaining != current:
        st.query_params.from_dict(remaining)  # one message, not one per parameter


def show_notices() -> None:
    for message in st.session_state.pop(_NOTICES, []):
        st.toast(message, icon="ℹ️")


def publish() -> None:
    """Write the bound widgets' current values into the URL, in one message; params no page bound this run are
    dropped (garbage or stale parameters do not linger in a shared link)."""
    if st.session_state.pop(_PUBLISHED, False):
        return
    bound: dict[str, Param] = st.session_state.pop(_BOUND, {})
    kept = st.session_state.setdefault(_KEPT, {})
    seen = st.session_state.setdefault(_SEEN, {})
    current = st.query_params.to_dict()
    final = {}
    for name, p in bound.items():
        if p.key in st.session_state:
            kept[p.key] = st.session_state[p.key]
            final[name] = seen[name] = _format(p, st.session_state[p.key])
        elif name in current:  # bound, but its widget has no value yet: the link's value stays
            final[name] = current[name]
    if final != current:
        st.query_params.from_dict(final)


def stop() -> None:
    """st.stop() for a page that ends early: its settings go into the URL first, so a link still reopens it."""
    publish()
    st.session_state[_PUBLISHED] = True
    st.stop()


def tabs(labels: list[str], key: str, name: str = "tab") -> tuple[str, Any]:
    """st.tabs where only the open tab runs (on_change="rerun"): opening the page computes and draws one tab's
    charts, not every tab's. The open tab is a setting like the others: in the URL (?tab=...) and kept when the
    student comes back. Returns (label of the open tab, its container)."""
    bind(name, key, choices=labels)
    containers = st.tabs(labels, key=key, on_change="rerun")
    return next(((label, c) for label, c in zip(labels, containers) if c.open), (labels[0], containers[0]))


def bind_text(name: str, text_key: str, example_key: str, last_example_key: str, examples: list[str],
              custom: str) -> None:
    """Bind a text box that has an example picker: a linked text also selects its example (or 'custom'),
    so the picker does not overwrite the text that came with the link."""
    before = st.session_state.get(text_key)
    bind(name, text_key)
    text = st.session_state.get(text_key)
    if text is not None and text != before:  # just seeded from the link
        example = text if text in examples else custom
        st.session_state[example_key] = st.session_state[last_example_key] = example
