"""A class's new view pushed to its students on this server process (#39's lag, #42 item 7): no student polls for it.

A student's tab used to ask its server once a second (an st.fragment `run_every` tick) whether the class had moved:
60 students cost the server 60 script runs a second while nothing changed, and a step reached them up to a second
late. Here one thread per server process looks at the classes its students are in (`ClassStoreAPI.pulses`: the
view's version, the question, the line about the leader) ten times a second, a read or two a class, and when one
changes it pokes each of those students' sessions: `poke(session, rerun)` reruns that session's class fragment, as
the tick would have (ui.class_mode does it through Streamlit). Replicas each run their own watcher on the shared store
(SQLite on one machine, Redis across machines), so a class spread over replicas moves together.

The students' tabs keep no timer at all: a browser's timer fires on its own clock, and a tick sent while a pushed page
switch is on its way carries the old page and URL back to the server. So the watcher does what the ticks also did:
- a store it cannot reach pokes every student once (their run says the class is paused), and again when it answers;
- every PRESENCE_S it tells the store which students are still here (`seen`: the leader's count), for each session
  whose tab is still connected (`alive`); a session no longer alive is forgotten.
No Streamlit here: the watcher is tested with a poke that records.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from viz_model.runtime.class_mode import ClassStoreAPI
from viz_model.runtime.class_redis import DOWN_RETRY_S

PUSH_EVERY_S = 0.1   # how often the watcher reads the followed classes' pulses: a step reaches a student this late
RUNNING_MAX = 3      # poked sessions running at once; the rest wait their turn (see Pusher._drain)
DRAIN_EVERY_S = 0.01  # how often the watcher looks for a free turn while students wait for theirs
STARTING_S = 0.05    # a poked session counts as running this long even before its run has started
PRESENCE_S = 4.0     # how often it says which students are here (runtime.class_mode.FOLLOWER_STALE_S is 10 s)
DOWN = ("store unreachable",)  # the pulse of every class while the store does not answer; drawn by a paused run
PAUSED_RETRY_S = DOWN_RETRY_S  # a run that showed the class paused while the watcher reached the store: poked again
#                                this late (a server's store fails at once that long after a failure: class_redis)
_LOG = logging.getLogger(__name__)


@dataclass
class Registration:
    code: str                    # the class
    student: str                 # the student's anonymous id in it
    rerun: Any                   # what `poke` needs to rerun the session's class fragment (ui: the fragment's id)
    pulse: tuple                 # the class's pulse as that run drew it (DOWN: the run said the class is paused)
    watch_view: bool             # False: a student exploring on their own (the view's version is not theirs to take)
    at: float = 0.0              # when that run registered (the watcher's clock)
    poked: tuple | None | bool = False  # the pulse it was poked for (one poke a change, however long its run waits)


def _same(pulse: tuple | None, drawn: tuple, watch_view: bool) -> bool:
    """Whether a student who drew `drawn` has nothing new to show at `pulse` (ClassView.pulse: version, question,
    leader's line; the version counts only for a student who follows the view; DOWN: the class is paused)."""
    if pulse is None or DOWN in (pulse, drawn):
        return pulse == drawn
    return pulse == drawn if watch_view else pulse[1:] == drawn[1:]


class Pusher:
    """Who is in which class on this process, and the watcher that pokes them when their class changes.

    `open_store`: a store of the watcher's own (its thread's connection). `poke(session, rerun) -> bool`: rerun that
    session's class fragment; False when the session is gone. `alive(session) -> bool`: its tab is connected.
    `busy(session) -> bool`: a run of that session is under way."""

    def __init__(self, open_store: Callable[[], ClassStoreAPI], poke: Callable[[str, Any], bool],
                 alive: Callable[[str], bool], busy: Callable[[str], bool] = lambda session: False,
                 clock: Callable[[], float] = time.monotonic):
        self._open_store, self._poke, self._alive, self._busy, self._clock = open_store, poke, alive, busy, clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Registration] = {}   # session id -> its class, fragment and the pulse it drew
        self._waiting: dict[str, None] = {}            # sessions to poke, in turn (an ordered set)
        self._pulses: dict[str, tuple] = {}            # class code -> its pulse at the last look
        self._running: dict[str, float] = {}           # poked sessions whose run may be under way -> when poked
        self._store: ClassStoreAPI | None = None
        self._presence_at = -PRESENCE_S
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def register(self, session: str, code: str, student: str, rerun: Any, pulse: tuple,
                 watch_view: bool = True) -> None:
        """A student's class fragment ran (a push or a full run) and drew `code` at `pulse`: poke it when the class's
        pulse is another."""
        with self._lock:
            self._sessions[session] = Registration(code, student, rerun, pulse, watch_view, self._clock())
            if _same(self._pulses.get(code), pulse, watch_view):  # this run drew the class's newest: no poke due
                self._waiting.pop(session, None)
        self._start()

    def retry(self, session: str) -> None:
        """`poke` found the session's run under way after all: poke it again when that run has ended."""
        with self._lock:
            if session in self._sessions:
                self._waiting[session] = None

    def forget(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(session, None)
            self._waiting.pop(session, None)

    def following(self) -> dict[str, Registration]:
        with self._lock:
            return dict(self._sessions)

    def look(self) -> int:
        """One look at the classes of this process's students: poke each session whose class's pulse is not the one
        it drew (once for each new pulse; all of them when the store does not answer, and again when it does), in
        turn (`_drain`), and now and then say who is here. Returns how many sessions were poked."""
        sessions = self.following()
        if not sessions:
            return 0
        try:
            if self._store is None:
                self._store = self._open_store()
            pulses = self._store.pulses({r.code for r in sessions.values()})
        except Exception as e:  # ClassStoreDown, a broken connection: the students are told; a fresh one next look
            _LOG.info("class push: the class store did not answer: %s", e)
            self._store, pulses = None, dict.fromkeys((r.code for r in sessions.values()), DOWN)
        self._pulses = pulses
        for sid, reg in sessions.items():
            self._note(sid, reg, pulses.get(reg.code))
        if self._store is not None and self._clock() - self._presence_at >= PRESENCE_S:
            self._presence_at = self._clock()
            self._presence(self.following())
        return self._drain()

    def _note(self, sid: str, reg: Registration, pulse: tuple | None) -> None:
        if self._due(reg, pulse):
            reg.poked = pulse
            with self._lock:
                self._waiting[sid] = None

    def _due(self, reg: Registration, pulse: tuple | None) -> bool:
        """Whether a student who drew `reg` must be poked now that the class's pulse is `pulse`: once for each new
        pulse; once when the store does not answer, and again when it does. A run that said the class is paused while
        the store answered here (the server's store still failing at once after a failure, runtime.class_redis) is
        poked again PAUSED_RETRY_S after it, until a run draws the class: a paused page is never left paused."""
        back = reg.poked == DOWN and pulse != DOWN  # the store answers again: a paused student is told
        if back:
            return True
        if _same(pulse, reg.pulse, reg.watch_view) or pulse == reg.poked:
            return False
        return reg.pulse != DOWN or self._clock() - reg.at >= PAUSED_RETRY_S

    def _drain(self) -> int:
        """Poke the waiting sessions, RUNNING_MAX at a time. Sixty pokes at once would start sixty script threads
        that share one interpreter: each would end near the end of the whole burst, and a student outside the class
        who moved a slider meanwhile would wait as long. In turn, the first students are done within a run or two,
        and another student's run shares the interpreter with RUNNING_MAX others only.

        A session whose run is under way waits for its end: a rerun asked meanwhile would run after it, at the page
        and URL the poke was made with, while that run may be switching the page (a follower's page switch): the
        browser, told of a run on the page it left, showed a white page (a clean-clone run, session 8)."""
        now = self._clock()  # a poke starts its run on Streamlit's event loop a moment later: not busy yet, but running
        self._running = {sid: at for sid, at in self._running.items() if now - at < STARTING_S or self._busy(sid)}
        poked = 0
        with self._lock:
            waiting = list(self._waiting)
        for sid in waiting:
            if len(self._running) >= RUNNING_MAX:
                break
            reg = self._sessions.get(sid)
            if reg is not None and self._busy(sid):
                continue  # its turn comes when its run ends (a look every DRAIN_EVERY_S)
            with self._lock:
                self._waiting.pop(sid, None)
            if reg is None:
                continue
            if self._poke(sid, reg.rerun):
                self._running[sid] = now
                poked += 1
            else:
                self.forget(sid)
        return poked

    def _presence(self, sessions: dict[str, Registration]) -> None:
        """The students whose tabs are connected are here (the store's `seen`); the others are forgotten."""
        for sid, reg in sessions.items():
            if not self._alive(sid):
                self.forget(sid)
            else:
                self._store.seen(reg.code, reg.student, reg.watch_view)

    def stop(self) -> None:
        self._stop.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._watch, name="class-push", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        last = 0.0
        while not self._stop.wait(DRAIN_EVERY_S if self._waiting else PUSH_EVERY_S):
            try:
                if self._clock() - last >= PUSH_EVERY_S:
                    last = self._clock()
                    self.look()
                else:
                    self._drain()
            except Exception as e:  # noqa: BLE001 - the watcher outlives anything one look meets
                _LOG.warning("class push: %s", e)
                self._store = None
