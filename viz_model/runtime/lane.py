"""One lane for the class's followers (#42 item 7): their runs go single file, so a student who is not in the class
competes for the interpreter with at most one follower's run, never with the whole class at once.

Why: a server process runs Python one thread at a time (the GIL hands it round between every runnable thread). When
the instructor moves, every follower's tab reruns within a second; with 60 of them runnable together, another
student's 40 ms run got about a sixtieth of the interpreter and took hundreds of milliseconds. In one lane the class
still costs the same CPU in all, spread over the lag it is allowed (the issue's 2 s), and the others' runs share the
interpreter with one thread. No Streamlit here: ui.class_mode decides which runs are a follower's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Lane:
    """A FIFO gate `width` runs wide (threading.Semaphore wakes its waiters in arrival order). Counts what it saw."""

    width: int = 1
    _sem: threading.Semaphore = field(init=False, repr=False)
    _count: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    passed: int = field(default=0, init=False)
    waited_s: float = field(default=0.0, init=False)    # total time runs waited at the gate
    longest_wait_s: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"a lane is at least 1 run wide, not {self.width}")
        self._sem = threading.Semaphore(self.width)

    @contextmanager
    def held(self) -> Iterator[None]:
        t0 = time.perf_counter()
        self._sem.acquire()
        waited = time.perf_counter() - t0
        with self._count:
            self.passed += 1
            self.waited_s += waited
            self.longest_wait_s = max(self.longest_wait_s, waited)
        try:
            yield
        finally:
            self._sem.release()
