"""How many wrong instructor keys may be typed (#42, item 5): per session and per address, then a cool-down.

A session (one tab: its random `Tab.id`) may type SESSION_TRIES wrong keys, an address ADDRESS_TRIES; the next one
starts a cool-down of COOL_DOWN_S in which every key is refused, the right one too, and is not even compared, so
nothing about the right key can be learnt while it runs. A right key before the limit forgets the wrong ones. A
reload is a new session, hence the address count, which the sessions of this server process share.

The address is the one Streamlit sees (`st.context.ip_address`; None on loopback, counted as one address). Behind
HAProxy it is the proxy's, so every student behind it shares one address count (ADDRESS_TRIES is set high for that);
the per-session limit still applies to each tab.

Why a table in this process, not the class store: the key is the server's launch setting, never a class's state; a
check that writes no store keeps the key working while the store (Redis) is down; and it is small (a dict, a lock,
expiry), where a store table needs both backends. Its cost: each replica counts on its own, so a guesser who spreads
over N replicas gets N times the tries per cool-down, still a handful against a key's length.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

SESSION_TRIES = 5        # wrong keys one tab may type before its cool-down
ADDRESS_TRIES = 20       # ... and all the tabs of one address (a lecture hall behind one NAT or proxy) together
COOL_DOWN_S = 300.0      # then every key is refused for this long
FORGET_S = 900.0         # wrong keys this old (no cool-down running) are forgotten
MAX_ENTRIES = 10_000     # the table's bound: the oldest entries go first


def wait_text(seconds: float) -> str:
    """The sentence a refused key gets during a cool-down ("Too many wrong keys: try again in 5 minutes.")."""
    minutes = max(1, math.ceil(seconds / 60))
    return f"Too many wrong keys: try again in {minutes} minute{'' if minutes == 1 else 's'}."


class KeyLimiter:
    """Wrong-key counts per session and per address, shared by this process's sessions (thread-safe): each entry is
    [wrong keys, the last one's time, the end of its cool-down]."""

    def __init__(self, session_tries: int = SESSION_TRIES, address_tries: int = ADDRESS_TRIES,
                 cool_down_s: float = COOL_DOWN_S, clock: Callable[[], float] = time.monotonic):
        self.tries = {"session": session_tries, "address": address_tries}
        self.cool_down_s, self.clock = cool_down_s, clock
        self._lock = threading.Lock()
        self._table: dict[tuple[str, str], list[float]] = {}

    def _keys(self, session: str, address: str | None) -> list[tuple[str, str]]:
        return [("session", session), ("address", address or "loopback")]

    def _expire(self, now: float) -> None:
        for k in [k for k, (_, last, until) in self._table.items() if now >= max(last + FORGET_S, until)]:
            del self._table[k]
        if len(self._table) > MAX_ENTRIES:
            for k in sorted(self._table, key=lambda k: self._table[k][1])[:len(self._table) - MAX_ENTRIES]:
                del self._table[k]

    def wait_s(self, session: str, address: str | None) -> float:
        """Seconds left of a cool-down that refuses this session's keys (its own or its address's); 0 when none."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            return max([self._table[k][2] - now for k in self._keys(session, address) if k in self._table] + [0.0])

    def failed(self, session: str, address: str | None) -> float:
        """Count a wrong key; at the limit a cool-down starts (its seconds are returned, else 0)."""
        with self._lock:
            now, wait = self.clock(), 0.0
            self._expire(now)
            for kind, name in self._keys(session, address):
                entry = self._table.setdefault((kind, name), [0, now, 0.0])
                if now >= entry[2] > 0:  # a cool-down that ended: counting starts again
                    entry[0], entry[2] = 0, 0.0
                entry[0], entry[1] = entry[0] + 1, now
                if entry[0] >= self.tries[kind] and entry[2] <= now:
                    entry[2] = now + self.cool_down_s
                wait = max(wait, entry[2] - now)
            self._expire(now)
            return wait

    def succeeded(self, session: str, address: str | None) -> None:
        """A right key (outside a cool-down): the session's and the address's wrong keys are forgotten."""
        with self._lock:
            for k in self._keys(session, address):
                self._table.pop(k, None)

    def clear(self) -> None:
        with self._lock:
            self._table.clear()


KEY_TRIES = KeyLimiter()  # this server process's counts (tests swap in one with a fake clock)
