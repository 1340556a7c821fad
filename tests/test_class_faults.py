"""#42 (item 3, item 5's third point): a class survives its faults. A class store that cannot be reached (a real
redis-server stopped, or frozen with SIGSTOP) raises its one typed error fast; class mode then says in one sentence
that the class is paused while the page runs on, and when Redis is back the class resumes (its keys are there) or is
told lost (a restarted Redis keeps nothing). A leader on a flaky connection: the class lives on, and its students see
"the instructor is reconnecting" on their live page until the leader's heartbeat is back (the clock is moved, never
slept)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time

import class_backends
import pytest

from viz_model.lessons import classview
from viz_model.lessons.classview import PAUSED_TEXT, RECONNECTING_TEXT, leader_notice, lost_text
from viz_model.runtime import class_mode as cr
from viz_model.runtime.class_mode import ClassStoreDown
from viz_model.runtime.class_store import open_store

backend, redis_url = class_backends.backend, class_backends.redis_url
KEY = "s3cret"


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _pid(url: str) -> int:
    import redis

    with contextlib.closing(redis.Redis.from_url(url)) as client:
        return int(client.info("server")["process_id"])


def _until(what: str, ok, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := ok()):  # a condition, polled, bounded in time
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.1)
    return value


def _answers(store, code: str) -> bool:
    try:
        return store.get(code) is not None
    except ClassStoreDown:
        return False


# -- the store: one typed error, fast ----------------------------------------------------------------------------
def test_a_redis_that_hangs_or_refuses_raises_class_store_down_fast_and_a_page_never_waits_on_it():
    clock = Clock()
    with class_backends.redis_server() as url:
        store = open_store(url, clock=clock)
        kw = store._redis.connection_pool.connection_kwargs
        assert kw["socket_timeout"] < 1 and kw["socket_connect_timeout"] < 1  # no page waits a second on Redis
        code = store.create("lead")
        pid = _pid(url)
        os.kill(pid, signal.SIGSTOP)  # frozen: the connection stays open and nothing answers
        try:
            t0 = time.monotonic()
            with pytest.raises(ClassStoreDown, match="is not answering: TimeoutError"):
                store.get(code)
            hung = time.monotonic() - t0
            with pytest.raises(ClassStoreDown, match="failed under 1 s ago"):  # the next calls ask no network
                store.seen(code, "student", True)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert hung < 3.0  # one SOCKET_TIMEOUT_S (0.5 s, a timeout is not retried), bounded generously
        _until("the class read again once Redis answers", lambda: _answers(store, code), 10)  # its keys were kept
    with pytest.raises(ClassStoreDown, match="is not answering"):  # stopped: refused
        _until("the down window over", lambda: time.monotonic() > store._down_until, 5)
        store.get(code)


# -- the instructor on a flaky connection ------------------------------------------------------------------------
def test_the_students_line_says_reconnecting_after_a_few_seconds_then_away_after_a_minute():
    now = 1000.0
    assert leader_notice("tab", now - 2.0, now) is None  # a heartbeat every 2 s: nothing to say
    assert leader_notice("tab", now - classview.LEADER_RECONNECTING_S - 0.1, now) == RECONNECTING_TEXT
    assert leader_notice("tab", now - 59.0, now) == RECONNECTING_TEXT
    assert leader_notice("tab", now - classview.LEADER_AWAY_S - 0.1, now) == cr.AWAY_TEXT
    assert leader_notice(None, now, now) == cr.AWAY_TEXT  # nobody leads the class
    assert cr.REPUBLISH_S < classview.LEADER_RECONNECTING_S < cr.LEADER_STALE_S < classview.LEADER_AWAY_S


def test_a_class_lives_a_minute_and_more_without_its_leader_who_takes_it_back(backend):
    clock = Clock()
    store = backend.open(clock)
    code = store.create("tab-1", browser="instructor-browser")
    assert store.seen(code, "student", True)
    clock.t += 61.0  # a minute and a second without a heartbeat
    store.expire()
    view = store.get(code)
    assert view is not None and leader_notice(view.leader, view.leader_seen, clock()) == cr.AWAY_TEXT
    assert store.heartbeat(code, "tab-1")  # the flaky leader's tab is back: the same class, led by it
    view = store.get(code)
    assert leader_notice(view.leader, view.leader_seen, clock()) is None
    clock.t += 600.0
    store.expire()
    assert store.led_by("instructor-browser") == code  # a reload: the key takes the class back ...
    assert store.lead(code, "tab-2", "instructor-browser") and store.get(code).leader == "tab-2"
    clock.t += cr.CLASS_TTL_S + 1  # ... until the class expires (3 h without its leader)
    store.expire()
    assert store.get(code) is None


@pytest.fixture
def class_env(backend, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", KEY)
    backend.env(monkeypatch)
    from viz_model.ui import class_mode

    class_mode.store.clear()
    yield backend
    class_mode.store.clear()


def _leading(app_test):
    at = app_test()
    at.text_input(key="class_key").input(KEY).run()
    at.toggle(key="class_lead").set_value(True).run()
    return at, at.session_state["_class_code"]


def _student(code: str):
    from conftest import open_app

    return open_app(query={"class": code})


def _infos(at) -> list[str]:
    return [i.value for i in at.info]


def test_students_of_a_reconnecting_leader_see_it_on_their_live_page_until_the_heartbeat_is_back(app_test,
                                                                                                 class_env):
    leader, code = _leading(app_test)
    class_env.age_leader(class_env.open(), code, 20)  # the leader's tab has not been seen for 20 s
    student = _student(code)
    assert RECONNECTING_TEXT in [i.value for i in student.main.info]
    assert student.toggle(key="class_follow").value is True  # still following, on a page that is drawn and live
    assert student.get("plotly_chart") and not student.exception
    student.selectbox(key="start_layer").set_value(1).run()  # not frozen: the student's own move takes
    assert student.selectbox(key="start_layer").value == 1 and not student.exception
    leader.session_state["_class_beat_at"] = 0.0  # its heartbeat is due (the 0.5 s fragment in a browser)
    leader.run()  # the leader is back
    student.run()
    assert RECONNECTING_TEXT not in _infos(student) and not student.exception
    assert any(f"Class {code} · you follow the instructor." in c.value for c in student.main.caption)


# -- Redis stopped mid-class: paused, then resumed or lost -------------------------------------------------------
@pytest.fixture
def own_redis(monkeypatch):
    """A redis-server of this test's own (the test stops and restarts it), the app's class store."""
    from viz_model.ui import class_mode

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(class_backends.redis_server())
        monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", KEY)
        monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
        class_mode.store.clear()
        yield stack, url
        class_mode.store.clear()


def _paused(at, where) -> bool:
    return PAUSED_TEXT in [i.value for i in where(at).info]


def _class_in(app_test, caplog):
    caplog.set_level(logging.ERROR, logger="attention_lab")
    leader, code = _leading(app_test)
    student = _student(code)
    assert student.toggle(key="class_follow").value is True and not student.exception
    return leader, student, code


def _no_trace(caplog, *tabs) -> None:
    assert not [t for t in tabs if t.exception]
    assert not [e for t in tabs for e in t.error if "went wrong" in e.value]  # ui.errors.guard's net never caught it
    assert not [r for r in caplog.records if r.name == "attention_lab"]  # and logged no traceback


@pytest.mark.slow
def test_a_frozen_redis_pauses_the_class_in_one_sentence_and_it_resumes_when_redis_answers(app_test, own_redis,
                                                                                           caplog):
    _, url = own_redis
    leader, student, code = _class_in(app_test, caplog)
    pid = _pid(url)
    os.kill(pid, signal.SIGSTOP)
    try:
        student.run()
        leader.run()
        assert _paused(student, lambda a: a.main) and _paused(leader, lambda a: a.sidebar)
        assert student.get("plotly_chart") and leader.get("plotly_chart")  # the lesson page is drawn as ever
        student.selectbox(key="start_layer").set_value(1).run()  # and works
        assert student.selectbox(key="start_layer").value == 1
        _no_trace(caplog, student, leader)
    finally:
        os.kill(pid, signal.SIGCONT)
    _until("the student's class resumed", lambda: not _paused(student.run(), lambda a: a.main), 60)
    assert student.session_state["_class_code"] == code and student.query_params["class"] == code
    _until("the leader's class resumed", lambda: not _paused(leader.run(), lambda a: a.sidebar), 60)
    assert f"Class code: {code}" in [h.value for h in leader.subheader]
    _no_trace(caplog, student, leader)


@pytest.mark.slow
def test_a_restarted_redis_lost_the_class_which_is_told_in_one_sentence_with_a_new_start(app_test, own_redis,
                                                                                         caplog):
    stack, url = own_redis
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    leader, student, code = _class_in(app_test, caplog)
    stack.close()  # Redis stopped
    student.run()
    leader.run()
    assert _paused(student, lambda a: a.main) and _paused(leader, lambda a: a.sidebar)
    assert student.get("plotly_chart") and not student.exception
    _no_trace(caplog, student, leader)
    with class_backends.redis_server(port=port):  # back on its port, empty: it keeps nothing on disk
        lost = lost_text(code)
        _until("the student told the class was lost", lambda: lost in [w.value for w in student.run().warning], 60)
        assert "class" not in student.query_params and student.text_input(key="class_code_box")  # join again
        _until("the leader told the class was lost", lambda: lost in [w.value for w in leader.run().warning], 60)
        assert leader.toggle(key="class_lead").value is False
        leader.toggle(key="class_lead").set_value(True).run()  # start again
        new = leader.session_state["_class_code"]
        assert open_store(url).get(new) is not None and leader.query_params["class"] == new
        _no_trace(caplog, student, leader)

