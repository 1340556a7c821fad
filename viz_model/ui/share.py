"""Shareable views: a page's main settings live in the URL (?layer=1&head=2), so a link opens that view.

Pages call `bind(...)` before creating the widget; app.py calls `publish()` after the page has run.
Invalid values in a link fall back to the default with a notice, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import streamlit as st

_SEEN = "_url_seen"        # {param: raw value already applied}, so a link is applied once, not on every rerun
_BOUND = "_url_bound"      # params bound during this run: {param: widget key}
_NOTICES = "_url_notices"  # messages about ignored link values


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
    if p.choices is not None and value not in list(p.choices):
        raise ValueError
    if (p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi):
        raise ValueError
    return value


def _bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError


def bind(name: str, key: str, cast: Callable[[str], Any] = str, *, choices=None, lo=None, hi=None,
         fmt: Callable[[Any], str] = str) -> None:
    """Seed session_state[key] from ?name= (once per distinct link value) and mirror it back later."""
    p = Param(name, key, _bool if cast is bool else cast, choices, lo, hi, fmt)
    st.session_state.setdefault(_BOUND, {})[name] = p
    raw = st.query_params.get(name)
    seen = st.session_state.setdefault(_SEEN, {})
    if raw is None or seen.get(name) == raw:
        return
    seen[name] = raw
    try:
        st.session_state[key] = _parse(p, raw)
    except (ValueError, TypeError):
        st.session_state.setdefault(_NOTICES, []).append(
            f"The link's value {raw[:40]!r} for “{name}” is not valid here, so the default is used.")


def show_notices() -> None:
    for message in st.session_state.pop(_NOTICES, []):
        st.toast(message, icon="ℹ️")


def publish() -> None:
    """Write the bound widgets' current values into the URL; drop params no page bound this run."""
    bound: dict[str, Param] = st.session_state.pop(_BOUND, {})
    wanted = {}
    for name, p in bound.items():
        if p.key in st.session_state:
            value = st.session_state[p.key]
            wanted[name] = ("1" if value else "0") if isinstance(value, bool) else p.fmt(value)
    seen = st.session_state.setdefault(_SEEN, {})
    for name in list(st.query_params):
        if name not in wanted:
            del st.query_params[name]
    for name, raw in wanted.items():
        seen[name] = raw
        if st.query_params.get(name) != raw:
            st.query_params[name] = raw
