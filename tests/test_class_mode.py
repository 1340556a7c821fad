"""Class mode (#28) without a browser: the class store (codes, expiry, bounds, one answer per student, two processes
on one file, the restart rule, the constant-time key check), a tab's side of a class on a plain dict (joining by code
or link, following, publishing, a takeover), the model's own answers, and the "Class" expander in AppTest (off without
the key, a wrong key, leading, a student joining by link and following)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import class_backends
import numpy as np
import pytest

from viz_model import ASSETS_DIR
from viz_model.checkpoint import load_checkpoint
from viz_model.lessons import class_mode as lesson
from viz_model.lessons.class_mode import attention_question, rope_question
from viz_model.runtime import class_mode as cr
from viz_model.runtime.class_mode import ROOT as ROOT_DIR
from viz_model.runtime.class_mode import (
    ClassError,
    ClassStore,
    ClassStoreAPI,
    ClassStoreDown,
    FollowStep,
    Tab,
    key_matches,
    parse_code,
)
from viz_model.runtime.class_redis import RedisClassStore
from viz_model.runtime.class_store import open_for_server, open_store

# Every class-store test runs on both backends (#42): `backend` is "sqlite" then "redis" (a real redis-server)
backend, redis_url = class_backends.backend, class_backends.redis_url


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def db(tmp_path):
    return tmp_path / "class.sqlite"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(backend, clock):
    s = backend.open(clock)
    yield s
    s.close()


# -- codes and keys ------------------------------------------------------------------------------------------------
def test_class_codes_are_four_unambiguous_letters_and_each_class_has_its_own(store):
    codes = {store.create(f"leader{i}") for i in range(20)}
    assert len(codes) == 20
    for code in codes:
        assert len(code) == 4 and all(c in cr.CODE_LETTERS for c in code) and not set(code) & {"I", "O"}
        assert parse_code(code.lower() + " ") == code
    assert parse_code("AB1D") is None and parse_code("ABCDE") is None and parse_code(None) is None


def test_the_key_is_compared_in_constant_time_with_hmac(monkeypatch):
    calls = []
    real = cr.hmac.compare_digest
    monkeypatch.setattr(cr.hmac, "compare_digest", lambda a, b: calls.append((len(a), len(b))) or real(a, b))
    assert key_matches("s3cret", "s3cret")
    assert not key_matches("s3cre", "s3cret") and not key_matches("", "s3cret") and not key_matches("x", None)
    assert calls == [(32, 32), (32, 32)]  # digests of equal length: the typed key's length does not leak either


# -- the leader's view ---------------------------------------------------------------------------------------------
def test_a_published_view_gets_a_new_version_only_when_it_changes(store):
    code = store.create("L")
    v1 = store.publish(code, "L", "rope", {"rope_t": 3, "rope_tab": "Pair rotation"})
    assert store.publish(code, "L", "rope", {"rope_t": 3, "rope_tab": "Pair rotation"}) == v1
    v2 = store.publish(code, "L", "rope", {"rope_t": 4, "rope_tab": "Pair rotation"})
    assert v2 == v1 + 1
    view = store.get(code)
    assert (view.page, view.values, view.version) == ("rope", {"rope_t": 4, "rope_tab": "Pair rotation"}, v2)
    assert store.publish(code, "someone else", "", {}) is None  # only the leader's tab publishes


def test_two_connections_to_one_store_see_the_same_class_like_two_server_processes(backend, clock):
    a, b = backend.open(clock), backend.open(clock)
    assert isinstance(a, ClassStoreAPI) and isinstance(a, RedisClassStore if backend.name == "redis" else ClassStore)
    code = a.create("L")
    a.publish(code, "L", "explorer", {"explorer_layer": 1})
    assert b.get(code).values == {"explorer_layer": 1}
    assert b.seen(code, "s1", True) and a.seen(code, "s2", False)
    assert a.counts(code) == b.counts(code) == (1, 2)
    qid = a.ask(code, "L", "free", "Which?", ["x", "y"])
    assert b.answer(code, qid, "s1", 1) and a.answer(code, qid, "s2", 0)
    assert a.tally(code, qid) == b.tally(code, qid) == [1, 1]
    if backend.name == "sqlite":
        assert a.path == b.path and open(backend.where, "rb").read(16).startswith(b"SQLite format 3")
        assert a._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    a.close(), b.close()


def test_a_second_process_reads_the_class_a_first_one_wrote(backend, clock):
    store = backend.open(clock)
    code = store.create("L")
    store.publish(code, "L", "masks", {"masks_kind": "causal"})
    out = subprocess.run([sys.executable, "-c", "import sys; from viz_model.runtime.class_store import open_store; "
                          "v = open_store(sys.argv[1]).get(sys.argv[2]); print(v.page, v.values['masks_kind'])",
                          backend.where, code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["masks", "causal"]
    store.close()


def test_a_new_tab_with_the_key_takes_the_class_over(store, clock):
    code = store.create("old")
    assert store.get(code).leader_active(clock())
    clock.t += cr.LEADER_STALE_S + 1
    assert not store.get(code).leader_active(clock())  # the old tab closed: followers stay, with a notice
    assert store.lead(code, "new")
    assert store.publish(code, "old", "", {}) is None and not store.heartbeat(code, "old")
    assert store.heartbeat(code, "new") and store.get(code).leader_active(clock())


# -- bounds and expiry ---------------------------------------------------------------------------------------------
def test_classes_expire_when_their_leader_has_been_away_long(store, clock):
    old = store.create("L1")
    clock.t += cr.CLASS_TTL_S / 2
    kept = store.create("L2")
    clock.t += cr.CLASS_TTL_S / 2 + 1
    assert store.expire() == 1
    assert store.get(old) is None and store.get(kept) is not None


def test_the_number_of_classes_and_the_size_of_a_view_are_bounded(store, monkeypatch):
    monkeypatch.setattr(cr, "MAX_CLASSES", 3)
    code = store.create("L")
    store.create("L2"), store.create("L3")
    with pytest.raises(ClassError, match="already runs 3 classes"):
        store.create("L4")
    with pytest.raises(ClassError, match="too many settings"):
        store.publish(code, "L", "start", {"start_text": "x" * (cr.MAX_STATE_BYTES + 1)})


def test_questions_are_bounded(store):
    code = store.create("L")
    with pytest.raises(ClassError, match="2 to"):
        store.ask(code, "L", "free", "Which?", ["only one"])
    with pytest.raises(ClassError, match="2 to"):
        store.ask(code, "L", "free", "Which?", [str(i) for i in range(cr.MAX_CHOICES + 1)])
    with pytest.raises(ClassError, match="at most"):
        store.ask(code, "L", "free", "?" * (cr.MAX_PROMPT_CHARS + 1), ["a", "b"])
    with pytest.raises(ClassError, match="Only the tab"):
        store.ask(code, "a student", "free", "Which?", ["a", "b"])
    assert store.get(code).question is None


def test_a_question_or_choice_over_its_limit_is_refused_with_the_limit_never_cut(store):
    """#43 (9): a 5,000-character question left the box empty with no word, and a choice over 60 characters was cut
    to 60 in silence. Both are refused with a sentence naming the limit, and nothing is asked."""
    code = store.create("L")
    with pytest.raises(ClassError, match=f"5,000 characters; a question has at most {cr.MAX_PROMPT_CHARS}"):
        store.ask(code, "L", "free", "?" * 5000, ["a", "b"])
    long = "a very long choice " * 5
    with pytest.raises(ClassError, match=f"Choice 2 has {len(long.strip())} characters; a choice has at most "
                                         f"{cr.MAX_CHOICE_CHARS}"):
        store.ask(code, "L", "free", "Which?", ["short", long])
    assert store.get(code).question is None
    notes = cr.question_notes("?" * 5000, ["short", long])
    assert len(notes) == 2 and "5,000 characters" in notes[0] and f"at most {cr.MAX_CHOICE_CHARS}" in notes[1]
    assert cr.question_notes("Which?", ["a", "b"]) == []
    assert cr.question_count("Which?", ["a", "b"]).startswith(f"6 / {cr.MAX_PROMPT_CHARS} characters · 2 choices")
    cut = cr.fit_choice("15 " + "x" * 80)  # a preset's token: cut where the student sees it is cut
    assert len(cut) == cr.MAX_CHOICE_CHARS and cut.endswith("…") and cr.fit_choice("1 cat") == "1 cat"


def test_each_student_answers_once_and_a_new_question_starts_empty(store):
    code = store.create("L")
    qid = store.ask(code, "L", "attention", "Which word?", ["0 the", "1 cat", "2 sat"], {"correct": [1], "why": "."})
    assert store.answer(code, qid, "s1", 1)
    assert not store.answer(code, qid, "s1", 2)  # a second answer from the same tab is not counted
    assert store.answer(code, qid, "s2", 1) and store.answer(code, qid, "s3", 0)
    assert not store.answer(code, qid, "s4", 7) and not store.answer(code, qid + 1, "s4", 0)
    assert store.tally(code, qid) == [1, 2, 0] and store.has_answered(code, qid, "s1")
    assert store.reveal(code, "L", qid) and store.get(code).question.revealed
    assert not store.answer(code, qid, "s5", 0)  # answers close at the reveal
    q2 = store.ask(code, "L", "free", "Next?", ["a", "b"])
    assert store.tally(code, q2) == [0, 0] and store.tally(code, qid) == []
    store.close_question(code, "L")
    assert store.get(code).question is None


def test_a_server_restart_empties_the_store_but_a_second_replica_keeps_it(db):
    first = ClassStore.open_for_server(db)
    code = first.create("L")
    first._db.execute("INSERT INTO servers VALUES (?, 0)", (os.getppid(),))  # another live server process
    second = ClassStore.open_for_server(db)  # a replica starting beside it
    assert second.get(code) is not None
    first._db.execute("UPDATE servers SET pid = 999999999 - pid")  # every registered process has gone
    restarted = ClassStore.open_for_server(db)
    assert restarted.get(code) is None
    first.close(), second.close(), restarted.close()


def test_a_replica_restarting_keeps_the_classes_in_redis_and_a_redis_restart_loses_them(redis_url):
    """#42: replicas on several machines cannot see each other's processes, so opening the Redis store empties
    nothing (SQLite's rule above is per machine); what loses the classes is Redis itself, which keeps nothing."""
    first = open_for_server(redis_url)
    first._redis.flushdb()
    code = first.create("L")
    restarted = open_for_server(redis_url)  # a replica (re)starting while Redis runs
    assert restarted.get(code) is not None and restarted.get(code).leader == "L"
    first._redis.flushdb()  # what a Redis restart leaves: nothing (no RDB, no AOF)
    assert restarted.get(code) is None and not restarted.ended(code)
    first.close(), restarted.close()


def test_every_key_of_a_redis_class_expires_and_activity_renews_it(redis_url, clock):
    """#42: Redis drops an old class by itself: EXPIRE CLASS_TTL_S on every key of the class, renewed by activity."""
    store = open_store(redis_url, clock=clock)
    store._redis.flushdb()
    code = store.create("L", browser="laptop")
    qid = store.ask(code, "L", "free", "Which?", ["x", "y"])
    store.seen(code, "s1", True), store.answer(code, qid, "s1", 1)
    store.close_question(code, "L"), store.ask(code, "L", "free", "Next?", ["x", "y"])
    store.answer(code, qid + 1, "s1", 0)
    keys = [k for k in store._redis.keys("*") if k.endswith(":" + code)]
    assert sorted(k.split(":")[1] for k in keys) == ["a", "c", "ff", "fs", "k", "lb", "q"]
    keys.append(store.prefix + "classes")  # the list of classes lives while a class is active
    for key in keys:
        store._redis.expire(key, 5)
    assert all(0 < store._redis.ttl(k) <= 5 for k in keys)
    assert store.heartbeat(code, "L")  # the leader's tab is alive: every key of the class lives on
    assert all(cr.CLASS_TTL_S - 60 < store._redis.ttl(k) <= cr.CLASS_TTL_S for k in keys)
    assert store._redis.ttl(store.prefix + "ended") == -2  # nothing ended yet
    store.end(code)
    assert 0 < store._redis.ttl(store.prefix + "ended") <= cr.CLASS_TTL_S and store.ended(code)
    assert not [k for k in store._redis.keys("*") if k.endswith(":" + code)]  # an ended class leaves no key
    store.close()


def test_a_redis_that_is_down_raises_the_one_error_the_ui_reports(clock):
    """#42: a Redis that is down or gone is ClassStoreDown (a sqlite3.OperationalError: the UI's handler for a store
    it cannot read), with where it is and no password; never redis-py's own error."""
    with class_backends.redis_server() as url:
        store = open_store(url.replace("redis://", "redis://:pw@"), clock=clock)
        code = store.create("L")
    with pytest.raises(ClassStoreDown, match=r"Redis at 127\.0\.0\.1:\d+/0 is not answering") as e:
        store.get(code)
    assert isinstance(e.value, sqlite3.OperationalError) and "pw" not in str(e.value)
    for call in (lambda: store.create("L"), lambda: store.seen(code, "s", True), lambda: store.counts(code),
                 lambda: store.student_id("t"), lambda: store.publish(code, "L", "", {})):
        with pytest.raises(ClassStoreDown):
            call()
    with pytest.raises(ClassStoreDown, match="not a class store"):
        open_store("http://example.org/0")


def test_the_store_is_chosen_by_one_setting(monkeypatch, tmp_path, redis_url):
    monkeypatch.delenv("ATTENTION_LAB_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", str(tmp_path / "c.sqlite"))
    assert type(open_store()) is ClassStore and open_store().path == tmp_path / "c.sqlite"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", redis_url)
    assert type(open_store()) is RedisClassStore and type(open_for_server()) is RedisClassStore
    for typo in ("localhost:6379", "127.0.0.1", "redis:/x", "http://h/0"):  # never taken for a file name
        monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", typo)
        with pytest.raises(ClassStoreDown, match="is not a class store: use redis://host:6379/0"):
            open_for_server()
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", "sqlite")
    assert type(open_store()) is ClassStore and not (ROOT_DIR / "localhost:6379").exists()


def test_the_number_of_students_in_a_class_is_bounded(store, clock, monkeypatch):
    monkeypatch.setattr(cr, "MAX_FOLLOWERS", 2)
    code = store.create("L")
    assert store.seen(code, "s1", True) and store.seen(code, "s2", False)
    assert not store.seen(code, "s3", True)  # full
    assert store.seen(code, "s1", False)  # a student already in the class is still seen
    clock.t += cr.FOLLOWER_STALE_S + 1
    assert store.seen(code, "s3", True) and store.counts(code) == (1, 1)  # the others are gone: a seat is free
    clock.t += cr.FOLLOWER_DROP_S
    store.heartbeat(code, "L")
    store.expire()
    assert store.counts(code) == (0, 0) and not store.seen("ZZZZ" if code != "ZZZZ" else "YYYY", "s1", True)


def test_the_default_store_is_in_memory_on_dev_shm(monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_CLASS_DB", raising=False)
    path = cr.default_path()
    if os.path.isdir("/dev/shm"):
        assert str(path).startswith("/dev/shm/")
    monkeypatch.setenv("ATTENTION_LAB_CLASS_DB", "/tmp/x.sqlite")
    assert str(cr.default_path()) == "/tmp/x.sqlite"


# -- the model's own answers -------------------------------------------------------------------------------------
def test_the_attention_question_answers_with_the_rows_argmax():
    p = attention_question(["<bos>", "the", "cat", "sat"], np.array([0.1, 0.6, 0.2, 0.1]), 1, 2)
    assert p.choices == ["0 <bos>", "1 the", "2 cat", "3 sat"] and p.answer["correct"] == [1]
    assert "head 1·2" in p.prompt and "“sat”" in p.prompt and "60%" in p.answer["why"]


def test_the_rope_question_answers_from_the_angle_coverage():
    p = rope_question(128, 10000.0, 4096, 32768)
    correct = {p.choices[i] for i in p.answer["correct"]}
    assert "linear interpolation (PI)" in correct and "none (plain RoPE)" not in correct
    assert "NTK-aware base change" not in correct  # its lowest frequencies still leave the trained range


def test_the_start_question_is_answered_by_the_classroom_models_own_attention():
    ckpt = load_checkpoint(ASSETS_DIR / "models" / "classroom.safetensors")
    ids = [int(i) for i in ckpt.tokenizer.encode("the cat sat on the mat").ids]
    tokens = [ckpt.tokenizer.id_to_token(i) for i in ids]
    p = lesson.start_question(ckpt.model, tokens, ids, layer=99, head=99)  # clipped to the last layer and head
    L, H = ckpt.model.config.n_layers - 1, ckpt.model.config.n_heads - 1
    row = lesson.attention_row(ckpt.model, ids, L, H)
    assert f"head {L}·{H}" in p.prompt and p.answer["correct"] == [int(np.argmax(row))]
    with pytest.raises(ValueError, match="at least two tokens"):
        lesson.start_question(ckpt.model, tokens[:1], ids[:1], 0, 0)


class _Config:
    max_len, pos_encoding = 256, "rope"


def test_the_rope_preset_reads_the_pages_settings_and_defaults_to_the_models_context():
    default = lesson.rope_preset(_Config(), {})
    assert default == rope_question(128, 10000.0, 256, 8 * 256)
    typed = lesson.rope_preset(_Config(), {"rope_ext_L": 4096, "rope_ext_Lp": 32768, "rope_ext_bf": 16})
    assert typed == rope_question(128, 10000.0, 4096, 32768, {"beta_fast": 16.0})
    with pytest.raises(ValueError, match="shorter than the training length"):
        lesson.rope_preset(_Config(), {"rope_ext_L": 4096, "rope_ext_Lp": 1024})


def test_the_revealed_tally_marks_only_the_models_answer():
    p = rope_question(128, 10000.0, 4096, 32768)
    lines = lesson.tally_lines(p.choices, list(range(len(p.choices))), p.answer)
    assert [ok for ok, _, _ in lines] == [i in p.answer["correct"] for i in range(len(p.choices))]
    assert [(c, n) for _, c, n in lines] == list(zip(p.choices, range(len(p.choices))))
    assert not any(ok for ok, _, _ in lesson.tally_lines(["yes", "no"], [3, 1], {}))  # a free question: no ✓
    text = lesson.model_answer_text(p.choices, p.answer)
    assert text.startswith("The model's own answer: “linear interpolation (PI)”") and p.answer["why"] in text
    assert lesson.model_answer_text(["yes", "no"], {}) == "No model answer for a free question: discuss it."


# -- a tab's side of a class (runtime.class_mode.Tab on a dict) ----------------------------------------------------
def _leader(store, page: str = "") -> Tab:
    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: page}, lambda: store)
    leader.lead_changed()
    assert leader.leading() and leader.state[cr.CODE]
    return leader


def test_a_tab_follows_the_leaders_settings_and_stops_when_the_student_moves(store, clock):
    leader = _leader(store)
    leader.publish({"start_layer": 1, "start_heads": [0, 2]}, {"start_layer": "1", "class": "X"}, clock())
    code = leader.state[cr.CODE]
    student = Tab({cr.PAGE: "", "start_layer": 0, "start_heads": (0,)}, lambda: store)
    student.join(code, follow=True)
    step = student.follow_step(store.get(code), {"", "rope"}, clock())
    assert not step.stopped and step.page is None and set(step.changed) == {"start_layer", "start_heads"}
    assert student.state["start_layer"] == 1 and student.state["start_heads"] == (0, 2)  # a tuple stays a tuple
    assert student.follow_step(store.get(code), {"", "rope"}, clock()) == FollowStep()  # the same version: nothing
    # a follow tick with the browser holding the leader's values: from now on 0 is the student's own move, not the
    # browser echoing the value it held before (see the echo tests below)
    assert student.follow_step(store.get(code), {"", "rope"}, clock(), tick=True) == FollowStep()
    student.state["start_layer"] = 0  # the student moves a setting
    assert student.follow_step(store.get(code), {"", "rope"}, clock()) == FollowStep(stopped=True)
    assert student.state[cr.FOLLOW_KEY] is False and student.state[cr.ON_OWN] is True
    student.catch_up()
    assert student.follow_step(store.get(code), {"", "rope"}, clock()).changed == ("start_layer",)


def test_a_follower_switches_to_the_leaders_page_and_an_unknown_page_is_the_start(store, clock):
    leader = _leader(store, page="rope")
    leader.publish({}, {}, clock())
    code = leader.state[cr.CODE]
    student = Tab({cr.PAGE: ""}, lambda: store)
    student.join(code, follow=True)
    assert student.follow_step(store.get(code), {"", "rope"}, clock()) == FollowStep(page="rope")
    other = Tab({cr.PAGE: "rope"}, lambda: store)
    other.join(code, follow=True)
    assert other.follow_step(store.get(code), {""}, clock()) == FollowStep(page="")
    clock.t += cr.LEADER_STALE_S + 1  # the leader's tab is gone: stay where you are
    late = Tab({cr.PAGE: ""}, lambda: store)
    late.join(code, follow=True)
    assert late.follow_step(store.get(code), {"", "rope"}, clock()) == FollowStep()


def test_a_leader_republishes_only_a_changed_view_or_its_heartbeat_and_a_takeover_demotes_it(store, clock):
    leader = _leader(store)
    code = leader.state[cr.CODE]
    leader.publish({"start_layer": 1}, {"presenter_mode": "true"}, clock())
    seen = store.get(code).leader_seen
    clock.t += 1.0
    leader.publish({"start_layer": 1}, {}, clock())  # the same view, heartbeat not due: not written
    assert store.get(code).leader_seen == seen and "presenter_mode" not in store.get(code).query
    clock.t += cr.REPUBLISH_S
    leader.publish({"start_layer": 1}, {}, clock())
    assert store.get(code).leader_seen == clock() and store.get(code).version == 1
    second = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.CODE: code}, lambda: store)
    second.lead_changed()
    assert second.state[cr.CODE] == code and store.get(code).leader == second.id
    leader.publish({"start_layer": 2}, {}, clock())
    assert leader.state[cr.LOST] == code and not leader.leading() and store.get(code).version == 1


def test_the_code_box_and_the_link_join_a_class_or_say_why_not(store, clock):
    code = _leader(store).state[cr.CODE]
    tab = Tab({cr.CODE_BOX: "nope"}, lambda: store)
    tab.typed_code()
    assert "4 letters" in tab.state.pop(cr.ERROR) and tab.state[cr.CODE_BOX] == "" and cr.CODE not in tab.state
    tab.state[cr.CODE_BOX] = "zzzz" if code != "ZZZZ" else "yyyy"
    tab.typed_code()
    assert "There is no class" in tab.state.pop(cr.ERROR)
    tab.state[cr.CODE_BOX] = code.lower()
    tab.typed_code()
    assert tab.state[cr.CODE] == code and tab.state[cr.FOLLOW_KEY] is True
    query = {}
    assert tab.enter(query).code == code and query == {"class": code}  # the code goes into the URL
    tab.leave(query)
    assert cr.CODE not in tab.state and query == {}
    linked = Tab({}, lambda: store)
    assert linked.enter({"class": code.lower()}).code == code and linked.state[cr.FOLLOW_KEY] is True
    query = {"class": "ZZZZ" if code != "ZZZZ" else "YYYY"}
    gone = Tab({}, lambda: store)
    assert gone.enter(query) is None and gone.state[cr.GONE] and query == {}
    bad = Tab({}, lambda: store)
    assert bad.enter({"class": "x1"}) is None and "is not a class code" in bad.state[cr.ERROR]


def test_the_instructor_key_box_is_cleared_and_a_wrong_key_is_told(monkeypatch, store):
    monkeypatch.setenv(cr.KEY_ENV, "s3cret")
    tab = Tab({cr.KEY_BOX: "guess"}, lambda: store)
    tab.check_key()
    assert tab.state[cr.KEY_BAD] and not tab.state.get(cr.INSTRUCTOR) and tab.state[cr.KEY_BOX] == ""
    tab.state[cr.KEY_BOX] = "s3cret"
    tab.check_key()
    assert tab.state[cr.INSTRUCTOR] and tab.state[cr.KEY_BOX] == ""


def test_a_browsers_xsrf_token_is_unmasked_and_anything_else_is_none():
    token, mask = bytes(range(16)), bytes([7, 200, 13, 99])
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
    assert cr.xsrf_token(f"2|{mask.hex()}|{masked.hex()}|1700000000") == token.hex()
    assert cr.xsrf_token(f"2|{mask.hex()}|{masked.hex()}") is None and cr.xsrf_token(None) is None
    assert cr.xsrf_token("2|zz|00|1") is None and cr.xsrf_token(f"1|{mask.hex()}|{masked.hex()}|1") is None


def test_the_leaders_count_says_who_follows_and_who_explores():
    assert cr.presence_text(1, 1) == "**1** student follows"
    assert cr.presence_text(3, 5) == "**3** students follow · 2 exploring on their own"
    assert cr.presence_text(0, 0) == "**0** students follow"


# -- following through the browser's echoes and page switches (#43, item 12) ----------------------------------
# A browser sends every widget value it holds with each rerun it asks for (its follow timer's too), and the value
# overwrites the tab's state. These tests play that browser on a dict: `browser_holds` is what a rerun the browser
# asked for leaves in the state. Before the fix, a value the browser still held when the leader's next change came was
# read as the student moving (following stopped while the browser's toggle still showed it on), and a view that came
# between a page switch and the new page's first run was marked applied though the page's widgets took the link's.
PAGES = {"", "explorer", "masks"}


def _following(store, clock, page: str = "") -> tuple[Tab, Tab, str]:
    leader = _leader(store, page=page)
    leader.publish({}, {}, clock())
    code = leader.state[cr.CODE]
    student = Tab({cr.PAGE: page}, lambda: store)
    student.join(code, follow=True)
    assert student.follow_step(store.get(code), PAGES, clock()) == FollowStep()
    return leader, student, code


def _leader_shows(leader: Tab, clock, page: str, values: dict) -> None:
    clock.t += 0.3  # the leader's quick Back/Next: a new view every 0.3 s
    leader.state[cr.PAGE] = page
    leader.publish(values, {k: str(v) for k, v in values.items() if v}, clock())


def browser_holds(student: Tab, **values) -> None:
    student.state.update(values)


def test_a_value_the_browser_still_echoes_is_not_a_move_and_the_next_tick_takes_the_latest_view(store, clock):
    leader, student, code = _following(store, clock, page="explorer")
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 0, "explorer_head": 0})
    student.follow_step(store.get(code), PAGES, clock(), tick=True)
    browser_holds(student, explorer_layer=0, explorer_head=0)
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep()  # in step, confirmed
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 1, "explorer_head": 0})
    step = student.follow_step(store.get(code), PAGES, clock(), tick=True)
    assert step.changed == ("explorer_layer",) and student.state["explorer_layer"] == 1
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 1, "explorer_head": 2})
    browser_holds(student, explorer_layer=0, explorer_head=0)  # the next tick left before layer 1 arrived
    step = student.follow_step(store.get(code), PAGES, clock(), tick=True)
    assert not step.stopped and student.state[cr.FOLLOW_KEY] is True
    assert set(step.changed) == {"explorer_layer", "explorer_head"}
    assert (student.state["explorer_layer"], student.state["explorer_head"]) == (1, 2)  # the latest view
    browser_holds(student, explorer_layer=1, explorer_head=2)
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep()
    browser_holds(student, explorer_layer=0)  # now 0 is the student's own move: following stops, and says so
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep(stopped=True)
    assert student.state[cr.ON_OWN] is True


def test_settings_that_arrive_during_a_page_switch_are_applied_after_it(store, clock):
    leader, student, code = _following(store, clock)
    browser_holds(student, explorer_layer=0, explorer_head=0)  # the Explorer's pickers, kept from an earlier visit
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 0, "explorer_head": 0})
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep(page="explorer")
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 1, "explorer_head": 0})  # before the new page ran
    student.started("explorer")  # the switch's full run
    assert student.follow_step(store.get(code), PAGES, clock()).page is None
    assert student.state["explorer_layer"] == 1  # set before the page's widgets are drawn
    browser_holds(student, explorer_layer=0)  # ... but the picker took the switch's link (explorer_layer absent)
    student.drew()
    _leader_shows(leader, clock, "explorer", {"explorer_layer": 1, "explorer_head": 2})
    step = student.follow_step(store.get(code), PAGES, clock(), tick=True)
    assert not step.stopped and set(step.changed) == {"explorer_layer", "explorer_head"}
    assert (student.state["explorer_layer"], student.state["explorer_head"]) == (1, 2)


def test_a_switch_that_did_not_happen_is_asked_again_not_read_as_the_student_leaving(store, clock):
    leader, student, code = _following(store, clock)
    _leader_shows(leader, clock, "masks", {})
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep(page="masks")
    # a rerun the browser asked for on the old page overtook the switch: the tab ran the Start page again
    student.started("")
    step = student.follow_step(store.get(code), PAGES, clock())
    assert step == FollowStep(page="masks") and student.state[cr.FOLLOW_KEY] is True
    student.started("masks")
    assert student.follow_step(store.get(code), PAGES, clock()) == FollowStep()
    student.drew()
    student.started("explorer")  # now a page the student opened: following stops
    assert student.follow_step(store.get(code), PAGES, clock()) == FollowStep(stopped=True)


def test_a_page_run_cut_short_is_drawn_again_and_then_the_student_is_told(store, clock):
    leader, student, code = _following(store, clock)
    student.started("")  # a full run that never reached its end (another rerun replaced it mid-page)
    for _ in range(cr.MAX_TRIES):
        assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep(redraw=True)
    step = student.follow_step(store.get(code), PAGES, clock(), tick=True)
    assert step.failed == ("page",)  # no more silent redraws: the banner says so, with Catch up
    student.catch_up()
    student.started("")
    student.drew()
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True) == FollowStep()


def test_a_view_that_does_not_take_is_retried_on_each_tick_then_reported(store, clock):
    leader, student, code = _following(store, clock)
    _leader_shows(leader, clock, "", {"start_layer": 1})
    steps = []
    for _ in range(cr.MAX_TRIES + 2):
        steps.append(student.follow_step(store.get(code), PAGES, clock(), tick=True))
        student.state.pop("start_layer", None)  # the setting never sticks on this tab
    assert steps[0].changed == ("start_layer",) and not steps[0].full
    assert steps[1].changed == ("start_layer",) and not steps[1].full  # the view's own rerun once more
    assert all(s.full for s in steps[2:cr.MAX_TRIES + 1])  # then the whole page
    assert steps[-1] == FollowStep(failed=("start_layer",))
    _leader_shows(leader, clock, "", {"start_layer": 2})  # a new view is tried afresh
    assert student.follow_step(store.get(code), PAGES, clock(), tick=True).changed == ("start_layer",)


def test_the_instructors_own_browser_and_tabs_are_not_counted_as_students(store, clock):
    """#43 (9): the leader's count included the instructor's own browser (a second tab on the class link)."""
    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.STUDENT: "browser-of-the-instructor"}, lambda: store)
    leader.lead_changed()
    code = leader.state[cr.CODE]
    second_tab = Tab({cr.STUDENT: "browser-of-the-instructor"}, lambda: store)
    second_tab.join(code, follow=True)
    assert second_tab.seen(code, second_tab.state[cr.STUDENT], clock())
    keyed = Tab({cr.INSTRUCTOR: True}, lambda: store)  # a tab with the key, in another browser (the projector's)
    keyed.join(code, follow=True)
    keyed.seen(code, "projector-browser", clock())
    student = Tab({}, lambda: store)
    student.join(code, follow=True)
    student.seen(code, "a-student", clock())
    assert store.counts(code) == (1, 1)
    successor = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.CODE: code, cr.STUDENT: "laptop"}, lambda: store)
    successor.lead_changed()  # the class taken over from another browser: that one is the instructor's too
    store.seen(code, "laptop", True)
    assert store.counts(code) == (1, 1)


def test_a_missing_class_says_whether_it_ended_was_this_tabs_or_never_existed(store, backend, clock):
    code = _leader(store).state[cr.CODE]
    never = "ZZZZ" if code != "ZZZZ" else "YYYY"
    tab = Tab({cr.CODE_BOX: never.lower()}, lambda: store)
    tab.typed_code()
    assert tab.state.pop(cr.ERROR) == (f"There is no class {never} on this server. Check the code: it is the 4 "
                                       "letters on the projector.")
    member = Tab({}, lambda: store)
    member.join(code, follow=True)
    backend.vanish(store)  # the class is gone without an end (a restarted server)
    assert member.enter({"class": code}) is None
    assert member.state[cr.GONE].startswith(f"Class {code} is no longer running (the server restarted")
    ended = _leader(store).state[cr.CODE]
    store.end(ended)
    late = Tab({}, lambda: store)
    assert late.enter({"class": ended}) is None and late.state[cr.GONE].startswith(f"Class {ended} has ended.")


# -- the Class expander in AppTest -------------------------------------------------------------------------------
@pytest.fixture
def class_env(backend, monkeypatch):
    """The app in class mode on each backend: ui.class_mode.store opens the SQLite file or Redis (#42)."""
    monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", "s3cret")
    backend.env(monkeypatch)
    from viz_model.ui import class_mode

    class_mode.store.clear()
    yield backend
    class_mode.store.clear()


def _labels(at) -> list[str]:
    return [w.label for w in [*at.toggle, *at.text_input]]


def test_without_the_key_the_expander_says_how_to_turn_class_mode_on(app_test, monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_INSTRUCTOR_KEY", raising=False)
    at = app_test()
    assert any("ATTENTION_LAB_INSTRUCTOR_KEY" in c.value for c in at.caption)
    assert "Instructor key" not in _labels(at) and "Lead the class" not in _labels(at)


def test_a_wrong_key_gives_no_lead_control_and_the_right_one_a_class_code(app_test, class_env):
    at = app_test()
    at.text_input(key="class_key").input("guess").run()
    assert "That is not the instructor key." in [e.value for e in at.error]
    assert "Lead the class" not in _labels(at)
    assert at.text_input(key="class_key").value == ""  # the typed key does not stay in the session
    at.text_input(key="class_key").input("s3cret").run()
    at.toggle(key="class_lead").set_value(True).run()
    code = at.session_state["_class_code"]
    assert f"Class code: {code}" in [h.value for h in at.subheader]
    assert at.query_params["class"] == code
    assert not at.exception


def test_a_student_joining_by_link_follows_the_leaders_settings(app_test, class_env):
    leader = app_test()
    leader.text_input(key="class_key").input("s3cret").run()
    leader.toggle(key="class_lead").set_value(True).run()
    code = leader.session_state["_class_code"]
    leader.selectbox(key="start_layer").set_value(1).run()
    leader.selectbox(key="start_head").set_value(2).run()
    view = class_env.open().get(code)
    assert view.page == "" and view.values["start_layer"] == 1 and view.values["start_head"] == 2
    assert "presenter_mode" not in view.values

    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    student = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    student.query_params["class"] = code
    student.run()
    assert student.toggle(key="class_follow").value is True
    assert student.selectbox(key="start_layer").value == 1 and student.selectbox(key="start_head").value == 2
    # the student moves a setting: following stops, with a way back
    student.selectbox(key="start_head").set_value(0).run()
    student.run()
    assert student.toggle(key="class_follow").value is False
    assert any("exploring on your own" in c.value for c in student.caption)
    student.button(key="class_banner_catch_up").click().run()  # above the page (#43, item 10)
    assert student.toggle(key="class_follow").value is True
    assert student.selectbox(key="start_head").value == 2
    assert not student.exception


def test_a_link_to_a_class_that_never_existed_says_there_is_none_and_to_check_the_code(app_test, class_env):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["class"] = "ZZZZ"
    at.run()
    # #43 (9): a code that never existed is not "no longer running (the server restarted...)"
    assert [w.value for w in at.main.warning] == [
        "There is no class ZZZZ on this server. Check the code: it is the 4 letters on the projector."]
    assert not any("no longer running" in w.value for w in at.warning)
    assert "class" not in at.query_params and not at.exception


def _leading(app_test):
    at = app_test()
    at.text_input(key="class_key").input("s3cret").run()
    at.toggle(key="class_lead").set_value(True).run()
    return at, at.session_state["_class_code"]


def test_the_start_preset_asks_about_the_view_and_answers_with_the_models_attention_argmax(app_test, class_env):
    import torch

    from viz_model.ui.models import load_model

    at, code = _leading(app_test)
    at.selectbox(key="start_layer").set_value(1).run()
    at.selectbox(key="start_head").set_value(2).run()
    at.selectbox(key="class_ask_kind").set_value(at.selectbox(key="class_ask_kind").options[0]).run()
    at.button(key="class_ask").click().run()
    q = class_env.open().get(code).question
    assert q.kind == "attention" and "head 1·2" in q.prompt
    ckpt = load_model(at.session_state["model_key"], "cpu")
    ids = [int(c.split(" ", 1)[0]) for c in q.choices]
    from viz_model.ui.widgets import encode_text

    enc = encode_text(ckpt, "The cat sat on the mat", bos=bool(at.session_state["start_bos"]), notice=False)
    with torch.no_grad():
        row = ckpt.model(torch.tensor([enc.ids]), trace=True).trace.layers[1].probs[0, 2, -1]
    assert ids == list(range(len(enc.ids)))
    assert q.answer["correct"] == [int(row.argmax())]
    assert any("Question 1" in m.value for m in at.markdown)
    assert not at.exception


def test_the_rope_preset_answers_from_the_panels_settings(app_test, class_env):
    at, code = _leading(app_test)
    at.switch_page("app_pages/rope.py").run()
    at.selectbox(key="class_ask_kind").set_value(at.selectbox(key="class_ask_kind").options[0]).run()
    at.button(key="class_ask").click().run()
    q = class_env.open().get(code).question
    assert q.kind == "rope" and "keeps every angle" in q.prompt
    assert "linear interpolation (PI)" in [q.choices[i] for i in q.answer["correct"]]
    assert not at.exception


def test_presenter_mode_shows_the_class_code_large_and_is_not_followed(app_test, class_env):
    at, code = _leading(app_test)
    at.toggle(key="presenter_mode").set_value(True).run()
    assert f"Class code: {code}" in [h.value for h in at.header]  # h2 in presenter mode (h3 otherwise)
    assert not any(f"Class code: {code}" in h.value for h in at.subheader)
    assert "presenter_mode" not in class_env.open().get(code).values


def test_a_student_whose_leader_left_stays_put_with_a_notice(app_test, class_env):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    _, code = _leading(app_test)
    class_env.age_leader(class_env.open(), code, 60)
    student = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    student.query_params["class"] = code
    student.run()
    assert any("closed or asleep" in i.value for i in student.info)
    assert student.toggle(key="class_follow").value is True and not student.exception


def test_a_student_who_types_the_code_joins_and_follows(app_test, class_env):
    _, code = _leading(app_test)
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    student = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    student.run()
    student.text_input(key="class_code_box").input("nope").run()
    assert any("4 letters" in e.value for e in student.error)
    student.text_input(key="class_code_box").input(code.lower()).run()
    assert student.toggle(key="class_follow").value is True
    assert student.query_params["class"] == code and not student.exception
    student.button(key="class_leave").click().run()
    assert "class" not in student.query_params and student.session_state["class_follow"] is False


def test_a_second_tab_with_the_key_takes_over_and_the_first_is_told(app_test, class_env):
    first, code = _leading(app_test)
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    second = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    second.query_params["class"] = code
    second.run()
    second.text_input(key="class_key").input("s3cret").run()
    second.toggle(key="class_lead").set_value(True).run()
    assert second.session_state["_class_code"] == code
    assert class_env.open().get(code).leader == second.session_state["_class_tab"]
    first.session_state["_class_beat_at"] = 0.0  # its heartbeat is due (the 0.5 s fragment in a browser)
    first.run()  # its publish is refused ...
    first.run()  # ... so it is told, and leads no more
    assert any(f"leads class {code}" in i.value for i in first.info)
    assert first.toggle(key="class_lead").value is False and not first.exception


def test_a_browsers_student_id_is_stable_anonymous_and_unlinked_by_a_restart(backend):
    store = open_for_server(backend.where)
    a = store.student_id("eebdeebf87ed4759212915cb3c83357e")
    assert a == store.student_id("eebdeebf87ed4759212915cb3c83357e") != store.student_id("00" * 16)
    assert len(a) == 16 and a not in "eebdeebf87ed4759212915cb3c83357e"
    assert backend.open().student_id("eebdeebf87ed4759212915cb3c83357e") == a  # the other process agrees
    if backend.name == "sqlite":
        store._db.execute("UPDATE servers SET pid = 999999999 - pid")  # every server process has gone
    else:
        store._redis.flushdb()  # Redis restarted: it kept nothing
    assert open_for_server(backend.where).student_id("eebdeebf87ed4759212915cb3c83357e") != a


def test_with_redis_down_every_class_control_says_so_and_nothing_raises(app_test, monkeypatch):
    """#42: class mode on a Redis that is down (here: nothing listens on its port). The page draws, and the key box,
    the Lead toggle and the code box each say in the Class box that the store cannot be reached: no traceback."""
    from viz_model.ui import class_mode

    monkeypatch.setenv("ATTENTION_LAB_INSTRUCTOR_KEY", "s3cret")
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", f"redis://127.0.0.1:{class_backends._free_port()}/0")
    class_mode.store.clear()
    try:
        at = app_test(query={"class": "ABCD"})
        assert not at.exception and at.get("plotly_chart")  # the page is drawn
        down = lambda: [e.value for e in at.sidebar.error if "cannot be" in e.value and "is not answering" in e.value]
        assert down()
        at.text_input(key="class_key").input("s3cret").run()
        assert not at.exception and down()
        at.toggle(key="class_lead").set_value(True).run()
        assert not at.exception and down() and at.toggle(key="class_lead").value is False
        at.text_input(key="class_code_box").input("WXYZ").run()
        assert not at.exception and down()
    finally:
        class_mode.store.clear()


# -- class mode in the main view (#43, item 10): the banner above the page ----------------------------------------
def _student(code: str):
    from conftest import open_app

    return open_app(query={"class": code})



def _ask(code: str, backend, prompt: str, choices: list[str]) -> int:
    return backend.open().ask(code, backend.open().get(code).leader, "free", prompt, choices)


def test_a_joined_student_answers_the_question_in_the_main_view_without_the_sidebar(app_test, class_env):
    _, code = _leading(app_test)
    qid = _ask(code, class_env, "Which layer sees the subject?", ["layer 0", "layer 1", "both"])
    student = _student(code)
    main, side = student.main, student.sidebar
    assert any("Which layer sees the subject" in m.value for m in main.markdown)
    assert [r.label for r in main.radio] == ["Your answer"] and not side.radio  # not only in the sidebar
    assert student.radio(key=f"class_pick_{qid}").options == ["layer 0", "layer 1", "both"]
    assert any(b.label == "Answer" for b in main.button)
    student.radio(key=f"class_pick_{qid}").set_value(1).run()
    student.button(key=f"class_answer_{qid}").click().run()
    assert class_env.open().tally(code, qid) == [0, 1, 0]
    student.run()
    assert any("Your answer is in" in s.value for s in student.main.success)
    assert not student.main.radio and not student.exception
    # the banner comes before the page: the class's lines are above the page's title
    kinds = [type(e).__name__ for e in student.main]
    assert kinds.index("Success") < kinds.index("Title")


def test_a_class_link_that_holds_old_settings_opens_the_leaders_view_and_keeps_following(app_test, class_env):
    """A reload of an old link, or a replica lost behind the load balancer (bench/hall_faults.py: the moved followers
    came back showing their own last view, then stopped following). On a tab's first run a URL-bound widget takes the
    URL's value over the state's; the page now opens again at the leader's link."""
    from conftest import open_app

    leader, code = _leading(app_test)
    leader.selectbox(key="start_layer").set_value(0).run()
    leader.selectbox(key="start_head").set_value(1).run()
    student = open_app(query={"class": code, "start_layer": "1", "start_head": "0"})
    assert not student.exception
    for _ in range(2):  # the first run, then a run the browser asks for (a follow tick reads the same state)
        assert (student.selectbox(key="start_layer").value, student.selectbox(key="start_head").value) == (0, 1)
        assert student.toggle(key="class_follow").value is True
        assert any(f"Class {code} · you follow the instructor" in c.value for c in student.main.caption)
        student.run()
    assert student.query_params.get("start_layer") in (None, ["0"], "0")  # the URL is the leader's link now


def test_only_a_setting_the_url_holds_with_another_value_reopens_the_page():
    leader = {"start_head": "1"}  # the leader's link: start_layer at its default, head 1
    keys = ("start_layer", "start_head")
    assert not cr.link_differs(leader, keys, {"class": "ABCD"})  # a plain class link: the state's values take
    assert not cr.link_differs(leader, keys, {"class": "ABCD", "start_head": "1"})
    assert cr.link_differs(leader, keys, {"class": "ABCD", "start_head": "0"})
    assert cr.link_differs(leader, keys, {"class": "ABCD", "start_layer": "1"})  # the leader's is the default


def test_the_banner_says_the_instructor_is_away_and_an_explorer_can_catch_up(app_test, class_env):
    leader, code = _leading(app_test)
    assert not [c for c in leader.main.caption if f"Class {code}" in c.value]  # no student banner for the leader
    class_env.age_leader(class_env.open(), code, 60)
    student = _student(code)
    assert any("closed or asleep" in i.value for i in student.main.info)
    student.toggle(key="class_follow").set_value(False).run()
    assert any(f"Class {code} · you are exploring on your own" in c.value for c in student.main.caption)
    student.button(key="class_banner_catch_up").click().run()
    assert student.toggle(key="class_follow").value is True and not student.exception


def test_a_5000_character_question_is_kept_and_told_too_long(app_test, class_env):
    """#43 (9): the box's max_chars dropped a long paste entirely (an empty box, no word)."""
    at, code = _leading(app_test)
    at.selectbox(key="class_ask_kind").set_value("Free question").run()
    long = "Why does this head look back? " * 170  # 5,100 characters
    at.text_input(key="class_ask_prompt").input(long).run()
    at.text_area(key="class_ask_choices").input("yes\nno").run()
    assert at.text_input(key="class_ask_prompt").value == long  # what the instructor typed stays
    assert any(f"{len(long.strip()):,} characters; a question has at most {cr.MAX_PROMPT_CHARS}" in w.value
               for w in at.sidebar.warning)
    assert any(f"{len(long.strip()):,} / {cr.MAX_PROMPT_CHARS} characters" in c.value for c in at.sidebar.caption)
    at.button(key="class_ask").click().run()
    assert class_env.open().get(code).question is None
    assert any(f"a question has at most {cr.MAX_PROMPT_CHARS}" in e.value for e in at.sidebar.error)
    assert at.text_input(key="class_ask_prompt").value == long and not at.exception


def test_a_choice_over_the_limit_is_refused_with_the_limit_not_cut_in_silence(app_test, class_env):
    at, code = _leading(app_test)
    at.selectbox(key="class_ask_kind").set_value("Free question").run()
    at.text_input(key="class_ask_prompt").input("Which head copies?").run()
    long = "the head that copies the token after the previous occurrence of this one"
    at.text_area(key="class_ask_choices").input(f"layer 0 head 1\n{long}").run()
    assert any(f"Choice 2 has {len(long)} characters; a choice has at most {cr.MAX_CHOICE_CHARS}" in w.value
               for w in at.sidebar.warning)
    at.button(key="class_ask").click().run()
    assert class_env.open().get(code).question is None
    at.text_area(key="class_ask_choices").input("layer 0 head 1\nlayer 1 head 2").run()
    at.button(key="class_ask").click().run()
    assert class_env.open().get(code).question.choices == ("layer 0 head 1", "layer 1 head 2")
    assert not at.sidebar.warning and not at.exception
