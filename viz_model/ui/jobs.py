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
from viz_model.runtime.jobs import RUNNING, JobRegistry

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
    _lease(owner)
    return owner


_registry = st.cache_resource(show_spinner=False, on_release=_release_registry)(_make_registry)
_lease = st.cache_resource(show_spinner=False, scope="session", on_release=_close_lease)(_open_lease)


def status_badge() -> None:
    """A one-line sidebar note on every page while this tab's training run is active (for app.py)."""
    job = registry().get(st.session_state.get(JOB_KEY))
    if job is not None and job.active:
        where = f" — step {job.step:,}/{job.total:,}" if job.status == RUNNING else ""
        st.sidebar.caption(f":material/model_training: Training {job.title}: {job.status}{where}")
