"""No traceback ever reaches a student: expected problems are messages, the rest is logged."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator

import streamlit as st

log = logging.getLogger("attention_lab")


@contextlib.contextmanager
def guard(what: str = "this view") -> Iterator[None]:
    """ValueError -> its sentence as a warning; anything else -> a friendly error plus a log line.

    Streamlit's own control flow (st.rerun / st.stop) derives from BaseException and passes through.
    """
    try:
        yield
    except ValueError as e:
        st.warning(f"{e}")
    except Exception:  # noqa: BLE001 - the page-level net
        log.exception("unexpected error in %s", what)
        st.error(f"Sorry — something went wrong while drawing {what}. The error was logged; "
                 "try another input or reload the page. Your settings are kept.")


def section(what: str):
    """One part of a page: its own widgets rerun only it (st.fragment), and its errors stay inside it."""
    def wrap(fn):
        @st.fragment
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with guard(what):
                fn(*args, **kwargs)
        return run
    return wrap
