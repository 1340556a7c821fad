"""#39 (item 4) an instructor presents a lecture, without a browser: a follower takes the leader's lecture place with
the page and settings; every question a class is asked stays for the class summary (counts only) in a store file made
before that table existed too; the summary's numbers, Markdown and CSV; an instructor's browser takes its class back
with the key after a reload; a preset's page-named kind can be asked; and in AppTest, the leader's panel asks the
step's question in one click and offers the summary, a follower's panel is read-only."""

from __future__ import annotations

import csv
import io
import sqlite3

import class_backends
import pytest
from conftest import ROOT

from viz_model.lessons.class_summary import AskedQuestion, summary_csv, summary_markdown, summary_rows
from viz_model.runtime import class_mode as cr
from viz_model.runtime.class_mode import ClassStore, FollowStep, Tab


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


# The store-level tests run on both backends (#42): the SQLite file, then a real redis-server
backend, redis_url = class_backends.backend, class_backends.redis_url


@pytest.fixture
def store(backend, clock):
    s = backend.open(clock)
    yield s
    s.close()


def _leader(store, page: str = "", browser: str | None = None) -> Tab:
    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: page, cr.STUDENT: browser}, lambda: store)
    leader.lead_changed()
    assert leader.leading()
    return leader


# -- following a lecture -------------------------------------------------------------------------------------------
def test_a_follower_takes_the_leaders_lecture_place_and_a_new_step_opens_its_page_afresh_as_the_leaders_did(store,
                                                                                                           clock):
    leader = _leader(store, page="explorer")
    code = leader.state[cr.CODE]
    leader.publish({"explorer_layer": 1}, {"explorer_layer": "1", "lecture": "attention", "step": "1"}, clock())
    student, query = Tab({cr.PAGE: "explorer", "explorer_layer": 0}, lambda: store), {"class": code}
    student.join(code, follow=True)
    step = student.follow_step(store.get(code), {"", "explorer"}, clock(), query=query)
    assert query == {"class": code, "lecture": "attention", "step": "1"}
    assert step == FollowStep(page="explorer", place=True) and student.state["explorer_layer"] == 1
    student.follow_step(store.get(code), {"", "explorer"}, clock(), tick=True, query=query)
    # Next to a step on the same page with the same settings: only the place changes; the page opens afresh
    clock.t += 1
    leader.publish({"explorer_layer": 1}, {"explorer_layer": "1", "lecture": "attention", "step": "2"}, clock())
    step = student.follow_step(store.get(code), {"", "explorer"}, clock(), tick=True, query=query)
    assert query["step"] == "2" and step == FollowStep(page="explorer", place=True)
    assert student.follow_step(store.get(code), {"", "explorer"}, clock(), tick=True, query=query) == FollowStep()
    # the leader changes a setting within the step: a plain follow, no new place
    leader.publish({"explorer_layer": 0}, {"lecture": "attention", "step": "2"}, clock())
    step = student.follow_step(store.get(code), {"", "explorer"}, clock(), tick=True, query=query)
    assert step == FollowStep(changed=("explorer_layer",)) and not step.place
    # the leader leaves the lecture: so does the follower's URL
    leader.publish({"explorer_layer": 0}, {}, clock())
    student.follow_step(store.get(code), {"", "explorer"}, clock(), tick=True, query=query)
    assert query == {"class": code}


def test_a_follower_that_explores_on_its_own_keeps_its_own_lecture_place(store, clock):
    leader = _leader(store)
    code = leader.state[cr.CODE]
    leader.publish({}, {"lecture": "attention", "step": "3"}, clock())
    student, query = Tab({cr.PAGE: ""}, lambda: store), {"lecture": "attention", "step": "7"}
    student.join(code, follow=False)
    assert student.follow_step(store.get(code), {""}, clock(), query=query) == FollowStep()
    assert query["step"] == "7"


# -- questions kept for the summary ------------------------------------------------------------------------------
def test_every_question_asked_is_kept_with_its_counts_and_ids_go_on_after_a_close(store):
    leader = _leader(store)
    code, me = leader.state[cr.CODE], leader.id
    q1 = store.ask(code, me, "lecture", "Which rows?", ["a", "b", "c"], {"correct": [1]})
    for student, choice in (("s1", 1), ("s2", 1), ("s3", 0)):
        assert store.answer(code, q1, student, choice)
    q2 = store.ask(code, me, "explorer", "Which head?", ["head 0", "head 1"], {"correct": [0]})  # replaces q1
    assert store.answer(code, q2, "s1", 0)
    store.close_question(code, me)
    q3 = store.ask(code, me, "free", "Ready?", ["yes", "no"])
    assert (q1, q2, q3) == (1, 2, 3)  # a closed question's number is never reused (the summary keys on it)
    asked = store.asked(code)
    assert [(q.qid, q.kind, q.counts) for q in asked] == [(1, "lecture", (1, 2, 0)), (2, "explorer", (1, 0)),
                                                          (3, "free", (0, 0))]
    assert asked[0].share_correct == pytest.approx(2 / 3) and asked[2].share_correct is None
    store.end(code)
    assert store.asked(code) == []  # a class that ends takes its questions with it


def test_a_store_file_made_before_the_summary_opens_and_keeps_questions(tmp_path, clock):
    path = tmp_path / "old.sqlite"
    ClassStore(path, clock=clock).close()
    with sqlite3.connect(path) as db:  # the store as it was before #39: no `asked` table
        db.execute("DROP TABLE asked")
    store = ClassStore(path, clock=clock)
    code = _leader(store).state[cr.CODE]
    leader_id = store._read("SELECT leader FROM classes WHERE code = ?", (code,))[0][0]
    store.ask(code, leader_id, "free", "One?", ["x", "y"])
    store.close_question(code, leader_id)
    assert [q.prompt for q in store.asked(code)] == ["One?"]
    store.close()


# -- the summary's numbers, Markdown and CSV -----------------------------------------------------------------------
QUESTIONS = [AskedQuestion(1, "lecture", "Which | rows?", ("a|b", "c"), {"correct": [0]}, (3, 1)),
             AskedQuestion(2, "free", "Ready?", ("yes", "no"), {}, (2, 2)),
             AskedQuestion(3, "explorer", "Which head?", ("h0", "h1"), {"correct": [1]}, (0, 0))]


def test_the_summary_says_the_share_that_picked_the_models_answer_and_only_counts():
    rows = summary_rows(QUESTIONS)
    assert [r["share correct"] for r in rows] == ["75% (3 of 4)", "no model answer", "no answers yet"]
    assert [r["model's answer"] for r in rows] == ["a|b", "(none: a free question)", "h1"]
    md = summary_markdown(QUESTIONS, "Attention", "Class ABCD")
    assert "| 1 | Which \\| rows? | 4 | 75% (3 of 4) | a\\|b |" in md  # a pipe in a text never breaks the table
    assert "| a\\|b | 3 | ✓ |" in md and "| c | 1 |  |" in md
    table = list(csv.DictReader(io.StringIO(summary_csv(QUESTIONS))))
    assert len(table) == 6 and table[0] == {"question": "1", "prompt": "Which | rows?", "choice": "a|b", "answers": "3",
                                            "model_answer": "yes", "question_answers": "4", "share_correct": "0.7500"}
    assert {r["share_correct"] for r in table[2:]} == {""}
    assert "No question was asked" in summary_markdown([], "Attention", "Class ABCD")


# -- the instructor takes the class back -------------------------------------------------------------------------
def test_an_instructor_browser_takes_its_class_back_with_the_key_and_another_browser_starts_none(store, clock,
                                                                                                 monkeypatch):
    monkeypatch.setenv(cr.KEY_ENV, "s3cret")
    old = _leader(store, browser="browser-1")
    code = old.state[cr.CODE]
    follower = Tab({cr.PAGE: ""}, lambda: store)
    follower.join(code, follow=True)
    reloaded = Tab({cr.STUDENT: "browser-1", cr.KEY_BOX: "s3cret"}, lambda: store)  # a reload: a new session
    reloaded.check_key()
    assert reloaded.leading() and reloaded.state[cr.CODE] == code and store.get(code).leader == reloaded.id
    assert follower.state[cr.FOLLOW_KEY] and follower.state[cr.CODE] == code  # the class goes on, still following
    stranger = Tab({cr.STUDENT: "browser-2", cr.KEY_BOX: "s3cret"}, lambda: store)
    stranger.check_key()
    assert stranger.state[cr.INSTRUCTOR] and not stranger.leading() and cr.CODE not in stranger.state


def test_a_presets_page_named_kind_can_be_asked(store):
    leader = _leader(store)
    qid = store.ask(leader.state[cr.CODE], leader.id, "encoder-decoder", "Which source word?", ["a", "b"],
                    {"correct": [0]})
    assert store.get(leader.state[cr.CODE]).question.kind == "encoder-decoder" and qid == 1
    with pytest.raises(cr.ClassError):
        store.ask(leader.state[cr.CODE], leader.id, "Not a kind!", "Q?", ["a", "b"])


# -- AppTest: the leader's panel and a follower's ------------------------------------------------------------------
def _app(state: dict, query: dict):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in state.items():
        at.session_state[k] = v
    at.query_params.update(query)
    return at.run()


def test_the_leaders_panel_asks_the_steps_question_in_one_click_and_offers_the_summary(class_env):
    from viz_model.lectures import builtin_lectures
    from viz_model.ui import class_mode

    lec = builtin_lectures()["attention"]
    n = next(i for i, s in enumerate(lec.steps, 1) if s.question is not None and not s.question.preset)
    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: ""}, class_mode.store)
    leader.lead_changed()
    code = leader.state[cr.CODE]
    at = _app(leader.state, {"lecture": "attention", "step": str(n)})  # the step opens its page, still leading
    assert not at.exception and at.session_state[cr.CODE] == code
    assert not [b for b in at.button if b.key and b.key.endswith("_check")]  # the leader's panel asks the class
    next(b for b in at.button if b.key == "lecture_ask_class").click().run()
    q, written = class_mode.store().get(code).question, lec.steps[n - 1].question
    assert q is not None and q.prompt == written.prompt and q.choices == written.choices
    assert q.answer["correct"] == list(written.correct) and q.kind == "lecture"
    assert q.answer["source"] == "lecture"  # revealed as the lecture's answer, not the model's
    labels = [e.proto.label for e in at.get("download_button")]
    assert "Markdown" in labels and "CSV" in labels  # the summary, now that a question was asked


def test_a_followers_panel_is_read_only(class_env):
    from viz_model.ui import class_mode

    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: ""}, class_mode.store)
    leader.lead_changed()
    code = leader.state[cr.CODE]
    at = _app({}, {"class": code, "lecture": "attention", "step": "1"})
    assert not at.exception and at.session_state[cr.FOLLOW_KEY]
    main = " ".join(c.value for c in at.main.caption)
    assert "step 1 of" in main and cr.FOLLOWING_TEXT in main
    assert not [b for b in at.button if b.key in ("lecture_next", "lecture_back")]


def test_a_follower_has_no_lesson_links_until_it_explores_on_its_own(class_env):
    """The instructor picks a follower's page: its sidebar says so in place of the 16 lesson and lecture links, a
    sixth of a follower's page switch (bench/lecture_present.py); switching Follow off brings them back."""
    from viz_model.ui import class_mode

    leader = Tab({cr.INSTRUCTOR: True, cr.LEAD_KEY: True, cr.PAGE: ""}, class_mode.store)
    leader.lead_changed()
    at = _app({}, {"class": leader.state[cr.CODE]})
    assert not at.exception and at.session_state[cr.FOLLOW_KEY]
    assert not at.sidebar.get("page_link")
    assert any("You follow the instructor, who picks the page" in c.value for c in at.sidebar.caption)
    # nor the Start page's "take the guided lecture, or explore any page from the sidebar" (no such page links)
    assert not [p for p in at.main.get("page_link") if "guided lecture" in p.proto.label]
    at.toggle(key=cr.FOLLOW_KEY).set_value(False).run()
    links = [e.proto.label for e in at.sidebar.get("page_link")]
    assert not at.exception and {"Explorer", "Masks", "Generate"} <= set(links) and len(links) >= 13
    assert [p for p in at.main.get("page_link") if "guided lecture" in p.proto.label]
    assert not any("You follow the instructor, who picks the page" in c.value for c in at.sidebar.caption)


def test_the_leader_keeps_the_lead_through_opening_a_lecture_and_stepping(class_env):
    """Before: the first page switch from the sidebar's lecture (or Next) dropped the "Lead the class" toggle's value
    (Streamlit drops a widget a run did not draw), and the instructor's tab became a student of its own class."""
    at = _app({}, {})
    at.text_input(key=cr.KEY_BOX).input("s3cret").run()
    at.toggle(key=cr.LEAD_KEY).set_value(True).run()
    code = at.session_state[cr.CODE]
    at.button(key="lecture_open_attention").click().run()
    for _ in range(2):
        assert at.session_state[cr.LEAD_KEY] and at.session_state[cr.CODE] == code
        assert [b for b in at.button if b.key == "lecture_next"]
        at.button(key="lecture_next").click().run()
    assert at.session_state[cr.LEAD_KEY] and at.query_params["step"] in ("3", ["3"]) and not at.exception
    from viz_model.ui import class_mode

    assert class_mode.store().get(code).query.get("step") == "3"  # the class's view is the leader's step


def test_a_range_the_follower_never_held_arrives_as_a_tuple(store, clock):
    """Streamlit 1.67 reads a range select_slider's state given as a list as one number (the Cost page's T range
    raised for 60 followers opening the lecture's Cost step): a fresh list value is set as a tuple."""
    leader = _leader(store, page="cost")
    code = leader.state[cr.CODE]
    leader.publish({"cost_T": [64, 1024]}, {"cost_T": ["64", "1024"], "lecture": "attention", "step": "8"}, clock())
    student = Tab({cr.PAGE: ""}, lambda: store)
    student.join(code, follow=True)
    student.follow_step(store.get(code), {"", "cost"}, clock(), query={})
    assert student.state["cost_T"] == (64, 1024)


def test_a_written_lecture_questions_answer_is_named_the_lectures_not_the_models():
    """A written question's answer is its author's: the reveal and the summary say so; a preset's stays the model's."""
    from viz_model.lessons.class_mode import model_answer_text

    choices = ["flatter", "sharper"]
    lecture = {"correct": [1], "why": "", "source": "lecture"}
    assert model_answer_text(choices, lecture).startswith("The lecture's answer: “sharper”")
    assert model_answer_text(choices, {"correct": [1]}).startswith("The model's own answer: “sharper”")
    asked = AskedQuestion(1, "lecture", "Without the scale?", tuple(choices), lecture, (2, 3))
    preset = AskedQuestion(2, "attention", "Which word?", tuple(choices), {"correct": [1]}, (2, 3))
    assert asked.model_answer == "sharper (the lecture's answer)" and preset.model_answer == "sharper"
