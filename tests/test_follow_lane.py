"""#42 (item 7): the class's followers run single file through one lane per server process (runtime.lane), so a
student who is not in the class shares the interpreter with one follower's run at a time, not with the whole class.
The lane itself (width, arrival order, release on an exception, its counts), and in AppTest which runs take it: a
following student's full run and its page parts, never the leader's, an exploring student's or a student's outside
any class."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import open_app

from viz_model.runtime import class_mode as cr
from viz_model.runtime.lane import Lane


def test_a_lane_one_run_wide_lets_one_run_at_a_time_in_arrival_order():
    lane, inside, most, order = Lane(1), [0], [0], []
    gate, lock = threading.Event(), threading.Lock()

    def run(i: int) -> None:
        with lane.held():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            order.append(i)
            gate.wait(5)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(5)]
    threads[0].start()
    deadline = time.monotonic() + 5
    while lane.passed < 1 and time.monotonic() < deadline:  # the first to arrive is inside before the others come
        time.sleep(0.001)
    for t in threads[1:]:
        t.start()
    gate.set()
    for t in threads:
        t.join(5)
    assert most[0] == 1 and lane.passed == 5
    assert order[0] == 0 and sorted(order) == list(range(5))


def test_a_wider_lane_lets_that_many_through_and_a_run_that_fails_gives_its_place_back():
    lane = Lane(2)
    with lane.held(), lane.held():
        assert not lane._sem.acquire(blocking=False)  # two inside: full
    with pytest.raises(RuntimeError), lane.held():
        raise RuntimeError("a page that fails")
    assert lane._sem.acquire(blocking=False) and lane._sem.acquire(blocking=False)  # both places free again
    with pytest.raises(ValueError, match="at least 1"):
        Lane(0)


@pytest.fixture
def class_env(tmp_path, monkeypatch):
    monkeypatch.setenv(cr.KEY_ENV, "s3cret")
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", str(tmp_path / "class.sqlite"))
    from viz_model.ui import class_mode, follow_lane

    class_mode.store.clear()
    follow_lane.lane.clear()
    yield
    class_mode.store.clear()
    follow_lane.lane.clear()


def test_only_a_following_students_runs_go_through_the_lane(class_env):
    from viz_model.ui import class_mode, follow_lane

    leader = cr.Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: ""}, class_mode.store)
    leader.lead_changed()
    code = leader.state[cr.CODE]
    outside = open_app()
    assert not outside.exception and follow_lane.lane().passed == 0  # not in a class: never waits for one
    follower = open_app(query={"class": code})
    assert follower.session_state[cr.FOLLOW_KEY] and not follower.exception
    passed = follow_lane.lane().passed
    follower.run()
    assert follow_lane.lane().passed == passed + 1  # one full run, one pass: a page part inside it does not wait again
    follower.toggle(key=cr.FOLLOW_KEY).set_value(False).run()  # exploring on their own now
    passed = follow_lane.lane().passed
    follower.run()
    outside.run()
    assert follow_lane.lane().passed == passed
