"""A follower's runs go through the class's one lane (runtime.lane, #42 item 7): the whole run of app.py, and a
fragment rerun (a follow tick, a page part rerun from it). Everyone else's runs pass by it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from viz_model.runtime import class_mode as rt
from viz_model.runtime.lane import Lane

LANE_ENV = "ATTENTION_LAB_FOLLOW_LANE"  # its width: how many followers' runs at once (1 unless a bench says other)
_HELD = "_attention_lab_in_lane"        # set on the run's context while it holds the lane (a fragment inside a run)


@st.cache_resource(show_spinner=False)
def lane() -> Lane:
    """This server process's lane (one per process: the GIL it shares out is the process's)."""
    return Lane(width=int(os.environ.get(LANE_ENV, "1")))


def following() -> bool:
    s = st.session_state
    return bool(s.get(rt.CODE)) and bool(s.get(rt.FOLLOW_KEY)) and not s.get(rt.LEAD_KEY)


@contextlib.contextmanager
def follower_run() -> Iterator[None]:
    """Hold the lane for this run if it is a follower's; a no-op for everyone else and inside a run that holds it."""
    ctx = get_script_run_ctx()
    if ctx is None or getattr(ctx, _HELD, False) or not following():
        yield
        return
    with lane().held():
        setattr(ctx, _HELD, True)
        try:
            yield
        finally:
            setattr(ctx, _HELD, False)
