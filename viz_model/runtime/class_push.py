"""A class's new view pushed to its students on this server process (#39's lag, #42 item 7): no student polls for it.

A student's tab used to ask its server once a second (an st.fragment `run_every` tick) whether the class had moved:
60 students cost the server 60 script runs a second while nothing changed, and a step reached them up to a second
late. Here one thread per server process looks at the classes its students are in (`ClassStoreAPI.pulses`: the
view's version, the question, the line about the leader) ten times a second, a read or two a class, and when one
changes it pokes each of those students' sessions: `poke(session, fragment)` reruns that session's class fragment, as
the tick would have (ui.class_mode does it through Streamlit). Replicas each run their own watcher on the shared store
(SQLite on one machine, Redis across machines), so a class spread over replicas moves together.

The fragment keeps a slow tick as a safety net; a session that stops registering (it left, or its tab closed) is
forgotten after FORGET_S. No Streamlit here: the watcher is tested with a poke that records.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from viz_model.runtime.class_mode import ClassStoreAPI

PUSH_EVERY_S = 0.1   # how often the watcher reads the followed classes' pulses: a step reaches a student this late
FORGET_S = 30.0      # a session that has not registered for this long is dropped (its safety tick is 5 s)
_LOG = logging.getLogger(__name__)


@dataclass
class Registration:
    code: str                    # the class
    rerun: Any                   # what `poke` needs to rerun the session's class fragment (ui: its tick's ClientState)
    pulse: tuple                 # the class's pulse as that run drew it
    watch_view: bool             # False: a student exploring on their own (the view's version is not theirs to take)
    at: float                    # time.monotonic() of that run
    poked: tuple | None | bool = False  # the pulse it was poked for (one poke a change, however long its run waits)


def _same(pulse: tuple | None, drawn: tuple, watch_view: bool) -> bool:
    """Whether a student who drew `drawn` has nothing new to show at `pulse` (ClassView.pulse: version, question,
    leader's line; the version counts only for a student who follows the view)."""
    if pulse is None:
        return False
    return pulse == drawn if watch_view else pulse[1:] == drawn[1:]


class Pusher:
    """Who follows which class on this process, and the watcher that pokes them when their class changes.

    `open_store`: a store of the watcher's own (its thread's connection). `poke(session, rerun) -> bool`: rerun that
    session's class fragment; False when the session is gone (it is forgotten)."""

    def __init__(self, open_store: Callable[[], ClassStoreAPI], poke: Callable[[str, Any], bool],
                 clock: Callable[[], float] = time.monotonic):
        self._open_store, self._poke, self._clock = open_store, poke, clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Registration] = {}   # session id -> its class, fragment and the pulse it drew
        self._store: ClassStoreAPI | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def register(self, session: str, code: str, rerun: Any, pulse: tuple, watch_view: bool = True) -> None:
        """A student's class fragment ran (a tick, a push or a full run) and drew `code` at `pulse`: poke it when the
        class's pulse is another."""
        with self._lock:
            self._sessions[session] = Registration(code, rerun, pulse, watch_view, self._clock())
        self._start()

    def forget(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)

    def following(self) -> dict[str, Registration]:
        with self._lock:
            return dict(self._sessions)

    def look(self) -> int:
        """One look at the followed classes: poke each session whose class's pulse is not the one it drew (once for
        each new pulse). Returns how many sessions were poked."""
        now = self._clock()
        with self._lock:
            for sid in [s for s, r in self._sessions.items() if now - r.at > FORGET_S]:
                del self._sessions[sid]
            sessions = dict(self._sessions)
        if not sessions:
            return 0
        if self._store is None:
            self._store = self._open_store()
        pulses = self._store.pulses({r.code for r in sessions.values()})
        poked = 0
        for sid, reg in sessions.items():
            pulse = pulses.get(reg.code)  # None: the class is gone, which the student's run says
            if _same(pulse, reg.pulse, reg.watch_view) or pulse == reg.poked:
                continue
            reg.poked = pulse
            if self._poke(sid, reg.rerun):
                poked += 1
            else:
                self.forget(sid)
        return poked

    def stop(self) -> None:
        self._stop.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._watch, name="class-push", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(PUSH_EVERY_S):
            try:
                self.look()
            except Exception as e:  # a store away (ClassStoreDown), a session torn down: the safety tick still runs
                _LOG.info("class push: %s", e)
                self._store = None  # a fresh connection at the next look
