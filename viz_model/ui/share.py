"""Shareable views: a page's main settings live in the URL (?explorer_layer=1&explorer_head=2), so a link opens that
view, and they are kept when a student leaves a page and comes back.

Streamlit does both: a widget created with `**share.URL` (`bind="query-params"`, `persist_state="session"`) is synced
with the query parameter named by its key, both ways; a default value leaves the URL, an invalid value in a link is
dropped, a fragment's widget updates the URL at once, and the value survives a page switch or a run where the widget
is not drawn (an emptied text box stops the page before its selectors). Widget keys are therefore unique per page
(`explorer_layer`, not `layer`): one key is one session_state entry, shared by every page that uses it.

What is left here is what the framework cannot do, each said at its function: options that shrink under a kept value
(another model with fewer layers), an example picker that follows its text box, a text box that cuts a long paste
instead of refusing it, and tabs remembered across a page switch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

URL = {"bind": "query-params", "persist_state": "session"}  # every shareable widget: in the link, kept per session
_TAB_KEPT = "_share_tabs"  # {tabs key: open label}: st.tabs has no persist_state


def in_slot(notice: Callable[..., Any]) -> Callable[..., Any]:
    """A notice that comes and goes (a cut paste, unknown words, a lower-cased sentence) drawn in a slot that is
    always there (an st.container, empty when there is nothing to say), so every widget below keeps its place.
    Streamlit's frontend places an element by its position in the page: when a note above a link-bound widget
    appears or goes, the browser mounts a second copy of the widget, and when the old copy is removed after the run
    it unregisters the link binding the two share; on a busy server that removal comes last, and from then on the
    link stops following the widget (measured with 1.67 on the Explorer's "Show step";
    tests/test_stable_widget_paths.py)."""
    @functools.wraps(notice)
    def drawn(*args, **kwargs):
        with st.container():
            return notice(*args, **kwargs)
    return drawn


def valid(key: str, options: Sequence[Any], default: Any = None) -> None:
    """Before a widget whose options depend on something else (a model's layers): a kept or linked value no longer
    among them goes back to the default. Streamlit would show the default too, but leave the stale value in the URL
    (measured with 1.67), so the link and the view would disagree."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = options[0] if default is None else default


def tabs(labels: list[str], key: str) -> tuple[str, Any]:
    """st.tabs where only the open tab runs: opening the page computes and draws one tab's charts, not every tab's.
    The open tab is a setting like the others: in the URL (?{key}=...) and kept when the student comes back.
    Returns (label of the open tab, its container)."""
    kept = st.session_state.setdefault(_TAB_KEPT, {})
    if key not in st.session_state and kept.get(key) in labels and not st.query_params.get(key):
        st.session_state[key] = kept[key]  # back on this page (a link's own ?tab= wins)
    valid(key, labels)
    containers = st.tabs(labels, key=key, on_change="rerun", bind="query-params")
    label, container = next(((lb, c) for lb, c in zip(labels, containers) if c.open), (labels[0], containers[0]))
    kept[key] = label
    return label, container


def show_tabs(views: dict[str, Callable[[], Any]], key: str) -> str:
    """The one way a page dispatches its tabs: `tabs` over the views' labels, then only the open view runs, inside
    its tab. Returns the open tab's label."""
    label, container = tabs(list(views), key)
    with container:
        views[label]()
    return label


def cut_long(key: str, limit: int) -> None:
    """on_change of a text box: a paste over `limit` characters is cut to `limit` and noted (see `cut_notice`). The
    box has no max_chars because the browser then refuses such a paste whole, silently."""
    text = st.session_state.get(key) or ""
    if len(text) > limit:
        st.session_state[key] = text[:limit]
        st.session_state[f"_{key}_cut"] = len(text)


@in_slot
def cut_notice(key: str, limit: int) -> None:
    """The notice for a paste `cut_long` shortened, shown once under its box."""
    n = st.session_state.pop(f"_{key}_cut", None)
    if n is not None:
        st.info(f"The pasted text had {n:,} characters; the box keeps the first {limit:,}.")


def follow_text(text_key: str, example_key: str, examples: Sequence[str], custom: str) -> None:
    """An example picker shows the example its text box holds, or `custom` once the student types their own (set
    before the picker is drawn: the text box is the one source of truth). Its on_change is `pick_example`."""
    text = st.session_state.get(text_key)
    if text is not None:
        st.session_state[example_key] = text if text in examples else custom


def pick_example(text_key: str, example_key: str, custom: str) -> None:
    """on_change of an example picker: the chosen example fills the text box."""
    example = st.session_state[example_key]
    if example != custom:
        st.session_state[text_key] = example


def select(where, label: str, options, key: str, default: Any = None, **kwargs) -> Any:
    """`where.selectbox` in the link and kept per session, after `valid` (its options may depend on the model);
    `default`: the first visit's value (else the first option).

    A selectbox's URL value is its option's label (format_func), and a label may change under a kept value (a query
    picker labelled by the sentence's tokens): the value is set again before each draw, so the picker keeps it and
    the URL takes the new label, instead of Streamlit resetting the picker to its default."""
    options = list(options)
    valid(key, options, default)
    if key in st.session_state:
        st.session_state[key] = st.session_state[key]
    index = 0 if default is None else options.index(default)
    return where.selectbox(label, options, index=index, key=key, **URL, **kwargs)


def text(where, label: str, value: str, key: str, limit: int, **kwargs) -> str:
    """`where.text_input` in the link and kept per session; a paste over `limit` characters is cut, with a notice
    (`cut_long`)."""
    out = where.text_input(label, value, key=key, on_change=cut_long, args=(key, limit), **URL, **kwargs)
    cut_notice(key, limit)
    return out


_LINK_READ = "_share_link_read"  # set once the session's first run (the one that opened the link) has been checked


def opened_link() -> dict[str, str] | None:
    """The query parameters of the link that opened this session, on its first run only (else None). Read before
    the page draws its widgets: after that, bound parameters hold the widgets' values."""
    if st.session_state.get(_LINK_READ):
        return None
    st.session_state[_LINK_READ] = True
    return st.query_params.to_dict()


def link_notices(link: dict[str, str] | None) -> None:
    """After the first run: Streamlit drops a link value its widget cannot take (not an option, out of range)
    silently; say which, so a student with a mistyped link knows the view is not the one linked."""
    for name, raw in (link or {}).items():  # kept in the URL: taken (a selectbox's URL value is its label)
        if name in st.session_state and name not in st.query_params and not _same(raw, st.session_state[name]):
            st.toast(f"The link's value {raw[:40]!r} for “{name}” is not valid here, so the default is used.",
                     icon="ℹ️", duration="infinite")  # stays until closed: a slow first load cannot hide it


def _same(raw: str, value: Any) -> bool:
    if isinstance(value, bool):
        return raw.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(raw) == float(value)
        except ValueError:
            return False
    return isinstance(value, (list, tuple)) or raw == str(value)  # a range's repeated params: not checked
