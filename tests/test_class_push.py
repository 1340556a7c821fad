"""A class's new view pushed to its students (runtime.class_push): no student polls for it.

Store level, on both backends: a class's pulse changes with what a student shows (the view's version, the question,
the leader's line) and with nothing else. The watcher: it pokes each registered student once for each change, a
student exploring alone only for the question or the leader's line, forgets a gone session and a silent one, and its
own thread pokes after a publish; a store that does not answer pokes everyone, and again when it does, and a run that
said the class is paused is poked until one draws it; the students
whose tabs are connected are counted present. Server level (a real `streamlit run app.py`): a protocol student that
sends nothing at all, and has no timer, is moved to the leader's new page by the server. Every wait is on a condition,
bounded in time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time

import class_backends
import pytest
import test_class_mode  # its clock and store fixtures: a store on each backend, at a clock the test moves
from conftest import ROOT, streamlit_server

from viz_model.lessons.classview import LEADER_AWAY_S, LEADER_RECONNECTING_S
from viz_model.runtime.class_push import DOWN, PAUSED_RETRY_S, PRESENCE_S, RUNNING_MAX, Pusher

backend, redis_url = class_backends.backend, class_backends.redis_url
Clock, clock, store = test_class_mode.Clock, test_class_mode.clock, test_class_mode.store


class Pokes:
    """A poke that records, and says a session is gone when told so."""

    def __init__(self):
        self.calls: list[tuple[str, object]] = []
        self.gone: set[str] = set()
        self.event = threading.Event()

    def __call__(self, session: str, rerun: object) -> bool:
        self.calls.append((session, rerun))
        self.event.set()
        return session not in self.gone


def _class(store) -> str:
    code = store.create("leader-tab")
    store.publish(code, "leader-tab", "explorer", {"explorer_layer": 0})
    return code


# -- the pulse -----------------------------------------------------------------------------------------------------
def test_a_class_pulse_moves_with_what_a_student_shows_and_nothing_else(store, clock):
    code = _class(store)
    before = store.pulses([code])[code]
    store.publish(code, "leader-tab", "explorer", {"explorer_layer": 0})  # the same view again: no new version
    store.heartbeat(code, "leader-tab")
    store.seen(code, "student-1", True)  # a student's presence is not what a student shows
    assert store.pulses([code])[code] == before
    store.publish(code, "leader-tab", "explorer", {"explorer_layer": 1})
    moved = store.pulses([code])[code]
    assert moved[0] == before[0] + 1 and moved[1:] == before[1:]
    qid = store.ask(code, "leader-tab", "free", "Which head?", ["0", "1"])
    asked = store.pulses([code])[code]
    assert asked[1] == (qid, False) and asked[0] == moved[0]
    store.reveal(code, "leader-tab", qid)
    assert store.pulses([code])[code][1] == (qid, True)
    store.heartbeat(code, "leader-tab")
    clock.t += LEADER_RECONNECTING_S + 1  # the leader's line changes with time alone
    assert store.pulses([code])[code][2] is not None
    clock.t += LEADER_AWAY_S
    assert store.pulses([code])[code][2] != store.get(code).pulse(clock.t - LEADER_AWAY_S)
    assert store.pulses([code, "ZZZZ"]).keys() == {code}  # a class gone is left out


# -- the watcher -----------------------------------------------------------------------------------------------------
def _pusher(store, pokes, alive=lambda sid: True):
    return Pusher(lambda: store, pokes, alive=alive)


def test_each_student_is_poked_once_for_each_change_and_not_after_drawing_it(store, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)  # look() by hand: no thread
    code, pokes = _class(store), Pokes()
    push = _pusher(store, pokes)
    drawn = store.get(code).pulse(store.clock())
    push.register("s1", code, "student-1", "tick-1", drawn)
    push.register("s2", code, "student-2", "tick-2", drawn)
    assert push.look() == 0 and pokes.calls == []
    store.publish(code, "leader-tab", "masks", {"masks_kind": "causal"})
    assert push.look() == 2 and sorted(pokes.calls) == [("s1", "tick-1"), ("s2", "tick-2")]
    assert push.look() == 0  # still running its poked run: not poked again for the same change
    push.register("s1", code, "student-1", "tick-1", store.get(code).pulse(store.clock()))  # s1 drew it
    store.publish(code, "leader-tab", "masks", {"masks_kind": "none"})
    assert push.look() == 2 and len(pokes.calls) == 4


def test_students_are_poked_a_few_at_a_time_and_the_next_as_soon_as_one_is_done(store, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes, running, t = _class(store), Pokes(), set(), Clock(0.0)
    push = Pusher(lambda: store, pokes, alive=lambda sid: True, busy=lambda sid: sid in running, clock=t)
    drawn = store.get(code).pulse(store.clock())
    sids = [f"s{i}" for i in range(5)]
    for sid in sids:
        push.register(sid, code, f"student-{sid}", "tick", drawn)
    store.publish(code, "leader-tab", "masks", {"masks_kind": "causal"})
    assert push.look() == RUNNING_MAX == 3  # the first three; the others wait for a turn
    running.update(sid for sid, _ in pokes.calls)
    t.t += 1.0
    assert push._drain() == 0  # all three still running
    running.discard(pokes.calls[0][0])
    assert push._drain() == 1  # one done: the next one's turn
    running.clear()
    assert push._drain() == 1 and sorted(sid for sid, _ in pokes.calls) == sids  # each poked once, in turn
    assert push.look() == 0


def test_a_student_whose_run_is_under_way_is_poked_after_it_and_not_when_that_run_drew_the_change(store,
                                                                                                  monkeypatch):
    """A rerun asked during a run runs after it, at the page the poke named, while that run may be switching the
    page: the browser showed a white page (a clean-clone run, session 8). So a busy session waits for its run's end,
    and a run that drew the newest pulse meanwhile needs no poke at all; a poke that found the run under way after
    all (Streamlit's event loop is the judge: `retry`) is made again when the run is over."""
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes, running, t = _class(store), Pokes(), {"s1", "s2"}, Clock(0.0)
    push = Pusher(lambda: store, pokes, alive=lambda sid: True, busy=lambda sid: sid in running, clock=t)
    drawn = store.get(code).pulse(store.clock())
    for sid in ("s1", "s2", "s3"):
        push.register(sid, code, f"student-{sid}", f"tick-{sid}", drawn)
    store.publish(code, "leader-tab", "masks", {"masks_kind": "causal"})
    assert push.look() == 1 and pokes.calls == [("s3", "tick-s3")]  # s1 and s2 are running: not poked now
    push.register("s2", code, "student-s2", "tick-s2", store.get(code).pulse(store.clock()))  # s2's run drew it
    running.clear()
    t.t += 1.0
    assert push._drain() == 1 and pokes.calls[-1] == ("s1", "tick-s1")  # s1's run ended: its turn; s2 is done
    push.retry("s1")  # the event loop found s1 running after all
    assert push._drain() == 1 and pokes.calls[-1] == ("s1", "tick-s1") and len(pokes.calls) == 3
    push.register("s1", code, "student-s1", "tick-s1", store.get(code).pulse(store.clock()))
    assert push.look() == 0 and push._drain() == 0


def test_a_student_exploring_alone_is_poked_for_the_question_not_for_the_view(store, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes = _class(store), Pokes()
    push = _pusher(store, pokes)
    push.register("explorer", code, "student-1", "tick", store.get(code).pulse(store.clock()), watch_view=False)
    store.publish(code, "leader-tab", "rope", {"rope_base": 100})
    assert push.look() == 0
    store.ask(code, "leader-tab", "free", "Which position?", ["1", "2"])
    assert push.look() == 1 and pokes.calls == [("explorer", "tick")]


def test_a_gone_session_is_forgotten_and_an_ended_class_is_told(store, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes = _class(store), Pokes()
    push = _pusher(store, pokes)
    drawn = store.get(code).pulse(store.clock())
    for sid in ("closed-tab", "open"):
        push.register(sid, code, f"student-{sid}", "tick", drawn)
    pokes.gone.add("closed-tab")
    store.publish(code, "leader-tab", "masks", {"masks_kind": "causal"})
    assert push.look() == 1 and set(push.following()) == {"open"}
    push.register("open", code, "student-open", "tick", store.get(code).pulse(store.clock()))
    store.end(code)
    assert push.look() == 1 and pokes.calls[-1] == ("open", "tick")  # its run says the class ended


def test_the_connected_students_are_counted_present_and_a_closed_tab_is_forgotten(store, clock, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, connected = _class(store), {"s1", "s2"}
    push = _pusher(store, Pokes(), alive=lambda sid: sid in connected)
    drawn = store.get(code).pulse(store.clock())
    push.register("s1", code, "student-1", "tick", drawn)
    push.register("s2", code, "student-2", "tick", drawn, watch_view=False)
    push.look()
    assert store.counts(code) == (1, 2)  # following, present: with no timer in the students' tabs
    connected.discard("s2")
    clock.t += 8.0  # past PRESENCE_S: s1 seen again; s2's tab closed, not seen since
    push._presence_at -= PRESENCE_S
    push.look()
    assert set(push.following()) == {"s1"}
    clock.t += 8.0  # s2 last seen 16 s ago: past FOLLOWER_STALE_S, no longer counted
    push._presence_at -= PRESENCE_S
    push.look()
    assert store.counts(code) == (1, 1)


class Flaky:
    """A watcher's store that does not answer while `down[0]` is set."""

    def __init__(self, store, down: list[bool]):
        self.store, self.down = store, down

    def pulses(self, codes):
        if self.down[0]:
            raise OSError("store away")
        return self.store.pulses(codes)

    def seen(self, *a):
        return self.store.seen(*a)


def test_a_store_that_does_not_answer_pokes_every_student_once_and_again_when_it_answers(store, monkeypatch):
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes, down = _class(store), Pokes(), [False]

    push = Pusher(lambda: Flaky(store, down), pokes, alive=lambda sid: True)
    drawn = store.get(code).pulse(store.clock())
    push.register("s1", code, "student-1", "tick", drawn)
    push.register("s2", code, "student-2", "tick", drawn)
    assert push.look() == 0
    down[0] = True
    assert push.look() == 2  # their runs say the class is paused
    assert push.look() == 0  # once
    down[0] = False
    assert push.look() == 2  # back: the same view, but the paused line must go
    assert push.look() == 0


def test_a_run_that_said_the_class_is_paused_is_poked_again_until_one_draws_the_class(store, monkeypatch):
    """A clean-clone run (session 9): a student poked when a frozen Redis came back stayed paused, because its run
    met the server's store still failing at once (class_redis.DOWN_RETRY_S after a failure) while the watcher's own
    store answered. A run that says the class is paused registers DOWN: never poked while the store does not answer,
    poked as soon as it does, and again PAUSED_RETRY_S after a run that was still paused."""
    monkeypatch.setattr(Pusher, "_start", lambda self: None)
    code, pokes, down, t = _class(store), Pokes(), [True], Clock(0.0)

    push = Pusher(lambda: Flaky(store, down), pokes, alive=lambda sid: True, clock=t)
    push.register("s1", code, "student-1", "tick", DOWN)  # its run said: paused
    assert push.look() == 0 and push.look() == 0  # the store is still away: nothing new to show
    t.t += 5.0
    down[0] = False
    assert push.look() == 1  # back: poked at once
    push.register("s1", code, "student-1", "tick", DOWN)  # that run met the server's store failing at once
    t.t += PAUSED_RETRY_S / 2
    assert push.look() == 0  # not before PAUSED_RETRY_S (each poke would fail at once meanwhile)
    t.t += PAUSED_RETRY_S / 2
    assert push.look() == 1 and push.look() == 0  # again, once
    push.register("s1", code, "student-1", "tick", store.get(code).pulse(store.clock()))  # drew the class
    t.t += 10 * PAUSED_RETRY_S
    assert push.look() == 0 and len(pokes.calls) == 2


def test_the_watchers_own_thread_pokes_after_a_publish(backend):
    store, pokes = backend.open(), Pokes()
    push = Pusher(backend.open, pokes, alive=lambda sid: True)
    try:
        code = _class(store)
        push.register("s1", code, "student-1", "tick", store.get(code).pulse(time.time()))
        store.publish(code, "leader-tab", "masks", {"masks_kind": "causal"})
        assert pokes.event.wait(10), "no poke within 10 s of the publish"
        assert pokes.calls == [("s1", "tick")]
    finally:
        push.stop()
        store.close()


def test_the_watchers_thread_outlives_a_store_that_cannot_be_opened():
    opened, third = [], threading.Event()

    def open_store():
        opened.append(1)
        if len(opened) >= 3:
            third.set()
        raise OSError("no store")

    push = Pusher(open_store, Pokes(), alive=lambda sid: True)
    try:
        push.register("s1", "ABCD", "student-1", "tick", (0, None, None))
        assert third.wait(10), opened  # tried again at each look: the thread lived through two failures
        assert push._thread.is_alive()
    finally:
        push.stop()


# -- a real server ---------------------------------------------------------------------------------------------------
KEY = "push-test-key"


@pytest.mark.slow
def test_a_student_who_sends_nothing_is_moved_to_the_leaders_page_by_the_server(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from class_follow import open_session

    env = {"ATTENTION_LAB_INSTRUCTOR_KEY": KEY, "ATTENTION_LAB_CLASS_DB": str(tmp_path / "class.sqlite"),
           "ATTENTION_LAB_CLASS_STORE": "", "ATTENTION_LAB_CLASS_PUSH": "1"}

    async def lesson(url: str):
        leader = await open_session(url, page="start")
        student = None
        try:
            await leader.set("class_key", KEY)
            await leader.set("class_lead", True)
            code = leader.query_string.split("class=")[1][:4]
            student = await open_session(url, query=f"class={code}")
            assert student.timers == {}  # no timer in a student's tab: the server runs its class fragment
            moved = await leader.open("masks")  # a full run: published at its end
            assert moved.ok
            deadline = time.monotonic() + 20
            while student.page_hash != student.pages["masks"]:  # the student sends nothing: runs come from the server
                run = await student.pushed_run(max(0.1, deadline - time.monotonic()))
                assert run is not None, "the server did not move the student within 20 s"
                assert run.ok, (run.status, run.exceptions, run.errors)
            assert f"class={code}" in student.query_string
        finally:
            await leader.close()
            if student is not None:
                await student.close()

    with streamlit_server("class-push.log", env=env) as url, concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(asyncio.wait_for(lesson(url), 240))).result()

