"""The Streamlit side of the training job registry: one registry per server, one lease per open tab, the badge.

    registry()   -> the server's JobRegistry (st.cache_resource)
    hold_lease() -> call once per page run: while the tab is connected its jobs are not orphaned
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from viz_model.runtime import train_process
from viz_model.runtime.jobs import QUEUED, JobRegistry

JOB_KEY = "train_job_id"  # session_state: this tab's training job


def registry() -> JobRegistry:
    return _registry()


def _make_registry() -> JobRegistry:
    # A training thread releases the GIL in every torch kernel and must win it back each time; with page threads
    # busy, the default 5 ms switch interval makes it wait up to 5 ms per kernel (measured: 2x slower live runs).
    sys.setswitchinterval(float(os.environ.get("ATTENTION_LAB_SWITCH_INTERVAL", "0.001")))
    if train_process.use_processes():
        train_process.warm_up()
    return JobRegistry()


def _release_registry(reg: JobRegistry) -> None:
    reg.shutdown()


def session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else "no-session"


@dataclass
class Lease:
    owner: str


def _open_lease(owner: str) -> Lease:
    registry().acquire_lease(owner)
    return Lease(owner)


def _close_lease(lease: Lease) -> None:
    registry().release_lease(lease.owner)


def hold_lease() -> str:
    """Hold this tab's lease (released when the websocket disconnects); returns the owner id."""
    owner = session_id()
    _lease(owner=owner)  # by keyword: see ui.cache.cached
    return owner


_registry = st.cache_resource(show_spinner=False, on_release=_release_registry)(_make_registry)
_lease = st.cache_resource(show_spinner=False, scope="session", on_release=_close_lease)(_open_lease)


BADGE_EVERY_S = 1.0  # the badge is one caption: cheap enough to follow the main progress bar (also 1 s)


def status_badge() -> None:
    """A one-line sidebar note on every page about this tab's training run (for app.py): live while the run is
    active (a fragment polling every BADGE_EVERY_S), its final step and status once it has ended."""
    job = registry().get(st.session_state.get(JOB_KEY))
    if job is None:
        return
    active = job.active  # decided on the full run: run_every only changes on a full rerun

    @st.fragment(run_every=BADGE_EVERY_S if active else None)
    def badge() -> None:
        j = registry().get(st.session_state.get(JOB_KEY))
        if j is None:
            return
        if active and not j.active:
            st.rerun()  # the run ended: one full rerun stops every timer and shows the final state everywhere
        st.caption(badge_text(j))

    with st.sidebar:
        badge()


def badge_text(job) -> str:
    where = f" — step {job.step:,}/{job.total:,}" if job.status != QUEUED else ""
    if job.active:
        return f":material/model_training: Training {job.title}: {job.status}{where}"
    return f":material/model_training: Trained {job.title}: {job.status}{where}"
