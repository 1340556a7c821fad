"""The instructor key's tries are limited per session and per address, then a cool-down (#42, item 5).

A fake clock moves time; nothing sleeps. The limiter's unit tests, the Class expander's callback (`Tab.check_key`) on a
real SQLite class store, and AppTests of the expander with sessions from chosen addresses. A leader who reloads and
takes the class back with the key is tested in tests/test_lecture_class.py and tests/test_browser_lecture_class.py."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from viz_model.runtime import class_mode as cr
from viz_model.runtime import key_limit
from viz_model.runtime.class_mode import Tab
from viz_model.runtime.class_store import open_store
from viz_model.runtime.key_limit import KeyLimiter, wait_text

ROOT = Path(__file__).resolve().parents[1]
KEY = "s3cret"


class Clock:
    def __init__(self, t: float = 5_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def limiter(clock, monkeypatch):
    """This process's table swapped for one on the fake clock (the default limits)."""
    lim = KeyLimiter(clock=clock)
    monkeypatch.setattr(key_limit, "KEY_TRIES", lim)
    return lim


# -- the limiter -----------------------------------------------------------------------------------------------------
def test_a_session_gets_its_tries_then_a_cool_down_and_then_counts_afresh(clock):
    lim = KeyLimiter(session_tries=3, address_tries=100, cool_down_s=300, clock=clock)
    assert [lim.failed("tab", "1.2.3.4") for _ in range(2)] == [0.0, 0.0] and lim.wait_s("tab", "1.2.3.4") == 0
    assert lim.failed("tab", "1.2.3.4") == 300  # the third wrong key starts the cool-down
    clock.t += 299
    assert lim.wait_s("tab", "1.2.3.4") == pytest.approx(1.0)
    assert lim.wait_s("other-tab", "1.2.3.4") == 0  # the address is under its limit: another tab may try
    clock.t += 1
    assert lim.wait_s("tab", "1.2.3.4") == 0
    assert lim.failed("tab", "1.2.3.4") == 0  # after the cool-down the count starts again from one


def test_the_sessions_of_one_address_share_its_count_and_other_addresses_do_not(clock):
    lim = KeyLimiter(session_tries=5, address_tries=6, cool_down_s=300, clock=clock)
    for i in range(5):
        lim.failed(f"tab{i}", "10.0.0.1")
    assert lim.failed("tab5", "10.0.0.1") == 300
    assert lim.wait_s("a-new-tab", "10.0.0.1") == 300 and lim.wait_s("a-new-tab", "10.0.0.2") == 0
    lim.failed("x", None)
    assert lim.wait_s("y", None) == 0 and lim._table[("address", "loopback")][0] == 1  # no address: one "loopback"


def test_a_right_key_before_the_limit_forgets_the_wrong_ones(clock):
    lim = KeyLimiter(session_tries=3, address_tries=3, clock=clock)
    lim.failed("tab", "1.2.3.4")
    lim.failed("tab", "1.2.3.4")
    lim.succeeded("tab", "1.2.3.4")
    assert lim.failed("tab", "1.2.3.4") == 0 and lim.failed("tab", "1.2.3.4") == 0  # two more before the limit


def test_old_wrong_keys_are_forgotten_and_the_table_is_bounded(clock, monkeypatch):
    lim = KeyLimiter(session_tries=2, clock=clock)
    lim.failed("tab", "1.2.3.4")
    clock.t += key_limit.FORGET_S
    assert lim.failed("tab", "1.2.3.4") == 0 and lim._table[("session", "tab")][0] == 1
    monkeypatch.setattr(key_limit, "MAX_ENTRIES", 10)
    for i in range(20):
        clock.t += 1
        lim.failed(f"t{i}", f"10.0.0.{i}")
    assert len(lim._table) == 10 and ("session", "t19") in lim._table and ("session", "t0") not in lim._table


def test_counting_is_thread_safe(clock):
    lim = KeyLimiter(session_tries=10**6, address_tries=10**6, clock=clock)

    def guess():
        for _ in range(500):
            lim.failed("tab", "1.2.3.4")

    threads = [threading.Thread(target=guess) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lim._table[("address", "1.2.3.4")][0] == 4000


def test_the_wait_is_said_in_whole_minutes_rounded_up():
    assert wait_text(300) == "Too many wrong keys: try again in 5 minutes."
    assert wait_text(61) == "Too many wrong keys: try again in 2 minutes."
    assert wait_text(1) == "Too many wrong keys: try again in 1 minute."


# -- the key box's callback ------------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path, clock):
    s = open_store(tmp_path / "class.sqlite", clock=clock)
    yield s
    s.close()


def _type(tab: Tab, key: str, address: str | None = "198.51.100.7") -> str | None:
    tab.state[cr.KEY_BOX] = key
    tab.check_key(address)
    assert tab.state[cr.KEY_BOX] == ""
    return tab.state.pop(cr.KEY_BAD, None)


def test_after_the_limit_the_right_key_is_refused_like_a_wrong_one_until_the_cool_down_ends(monkeypatch, store,
                                                                                            limiter, clock):
    monkeypatch.setenv(cr.KEY_ENV, KEY)
    tab = Tab({}, lambda: store)
    told = [_type(tab, f"guess{i}") for i in range(key_limit.SESSION_TRIES)]
    assert told[:-1] == ["That is not the instructor key."] * (key_limit.SESSION_TRIES - 1)
    assert told[-1] == "Too many wrong keys: try again in 5 minutes."
    right, wrong = _type(tab, KEY), _type(tab, "guess")
    assert right == wrong == "Too many wrong keys: try again in 5 minutes."  # nothing tells the right key apart
    assert not tab.state.get(cr.INSTRUCTOR)
    clock.t += key_limit.COOL_DOWN_S - 61
    assert _type(tab, KEY) == "Too many wrong keys: try again in 2 minutes." and not tab.state.get(cr.INSTRUCTOR)
    clock.t += 61
    assert _type(tab, KEY) is None and tab.state[cr.INSTRUCTOR]


def test_a_right_key_before_the_limit_resets_the_count(monkeypatch, store, limiter):
    monkeypatch.setenv(cr.KEY_ENV, KEY)
    tab = Tab({}, lambda: store)
    for i in range(key_limit.SESSION_TRIES - 1):
        _type(tab, f"guess{i}")
    assert _type(tab, KEY) is None and tab.state[cr.INSTRUCTOR]
    again = Tab({cr.TAB: tab.id}, lambda: store)  # the same session, typing again (the key box is drawn again)
    assert [_type(again, f"g{i}") for i in range(key_limit.SESSION_TRIES - 1)] == [
        "That is not the instructor key."] * (key_limit.SESSION_TRIES - 1)


# -- AppTest: the Class expander ------------------------------------------------------------------------------------
@pytest.fixture
def class_app(tmp_path, monkeypatch, clock):
    """An app with an instructor key, a class store in a temp folder, a limiter on the fake clock (5 tries per
    session, 7 per address) and `address["ip"]` as the address Streamlit reports for every session."""
    from streamlit.runtime.context import ContextProxy

    from viz_model.ui import class_mode

    monkeypatch.setenv(cr.KEY_ENV, KEY)
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", str(tmp_path / "class.sqlite"))
    monkeypatch.setattr(key_limit, "KEY_TRIES", KeyLimiter(session_tries=5, address_tries=7, clock=clock))
    address = {"ip": "203.0.113.5"}
    monkeypatch.setattr(ContextProxy, "ip_address", property(lambda self: address["ip"]))
    class_mode.store.clear()
    yield address
    class_mode.store.clear()


def _session():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()


def _type_in(at, key: str) -> str:
    """Type `key` in the Class expander's key box: the expander's error, "" when none."""
    at.text_input(key=cr.KEY_BOX).input(key).run()
    assert not at.exception
    return " ".join(e.value for e in at.sidebar.error)


def test_the_class_expander_limits_wrong_keys_per_session_and_address_until_the_cool_down(class_app, clock):
    first = _session()
    told = [_type_in(first, f"guess{i}") for i in range(5)]
    assert told[0] == "That is not the instructor key." and told[-1] == "Too many wrong keys: try again in 5 minutes."
    assert _type_in(first, KEY) == told[-1]  # the right key is refused: no "Lead the class"
    assert not [t for t in first.toggle if t.key == cr.LEAD_KEY]
    second = _session()  # another tab from the same address: two wrong keys more and the address is at its limit
    assert _type_in(second, "guess") == "That is not the instructor key."
    assert _type_in(second, "guess") == "Too many wrong keys: try again in 5 minutes."
    assert _type_in(_session(), KEY) == "Too many wrong keys: try again in 5 minutes."  # a third tab, the right key
    class_app["ip"] = "192.0.2.9"
    other = _session()  # another address is not limited
    assert _type_in(other, KEY) == "" and other.toggle(key=cr.LEAD_KEY)
    class_app["ip"] = "203.0.113.5"
    clock.t += key_limit.COOL_DOWN_S
    assert _type_in(first, KEY) == "" and first.session_state[cr.INSTRUCTOR] and first.toggle(key=cr.LEAD_KEY)
