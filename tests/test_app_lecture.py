"""#39 (3): a student steps through a lecture alone. The URL carries lecture=NAME&step=N; opening a step takes its page
with its settings, and the panel above the page says where the student is."""

from __future__ import annotations

import pytest
from conftest import open_app

from viz_model.lectures import PAGE_PARAMS, builtin_lectures

LECTURE = builtin_lectures()["attention"]


def _panel_step(at) -> str:
    return next(c.value for c in at.caption if " · step " in c.value)


def _press(at, key: str):
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception
    return at


def _on_page(at, page: str) -> bool:
    """The page that ran is `page`: one of its bound widgets (keys start with its prefix) is drawn."""
    keys = [w.key or "" for kind in ("text_input", "selectbox", "toggle") for w in getattr(at, kind)]
    return any(k.startswith(PAGE_PARAMS[page]) for k in keys)


def test_a_lecture_link_opens_step_one_on_its_page_with_its_settings():
    at = open_app(query={"lecture": "attention", "step": "1"})
    assert not at.exception
    step = LECTURE.steps[0]
    assert _panel_step(at) == f"{LECTURE.title} · step 1 of {len(LECTURE.steps)}"
    assert any(m.value == f"#### {step.title}" for m in at.markdown)
    assert step.page == "explorer" and _on_page(at, "explorer")
    assert at.text_input(key="explorer_text").value == step.params["explorer_text"]
    assert at.selectbox(key="explorer_head").value == int(step.params["explorer_head"])
    assert at.button(key="lecture_back").disabled and not at.button(key="lecture_next").disabled


def test_next_opens_the_next_step_with_its_settings_and_back_returns():
    at = open_app(query={"lecture": "attention", "step": "2"})
    assert _panel_step(at).endswith("step 2 of 10")
    assert _on_page(at, "qkv") and not _on_page(at, "explorer")
    assert at.text_input(key="qkv_text").value == LECTURE.steps[1].params["qkv_text"]
    _press(at, "lecture_next")  # step 3: the Explorer with the scale switched off
    step = LECTURE.steps[2]
    assert _on_page(at, "explorer") and not _on_page(at, "qkv")
    assert _panel_step(at).endswith("step 3 of 10") and at.query_params["step"] == "3"
    assert at.toggle(key="explorer_scale").value is False and step.params["explorer_scale"] == "false"
    _press(at, "lecture_next")  # step 4: the same page, its own settings (the scale back at its default)
    step = LECTURE.steps[3]
    assert _panel_step(at).endswith("step 4 of 10")
    assert at.selectbox(key="explorer_head").value == int(step.params["explorer_head"])
    assert at.toggle(key="explorer_scale").value is True
    _press(at, "lecture_back")
    assert _panel_step(at).endswith("step 3 of 10") and at.toggle(key="explorer_scale").value is False


def test_back_to_this_steps_view_undoes_what_the_student_changed():
    at = open_app(query={"lecture": "attention", "step": "1"})
    at.selectbox(key="explorer_head").set_value(0).run()
    assert at.selectbox(key="explorer_head").value == 0
    _press(at, "lecture_view")
    assert at.selectbox(key="explorer_head").value == int(LECTURE.steps[0].params["explorer_head"])
    assert _panel_step(at).endswith("step 1 of 10")


def test_the_last_step_has_no_next():
    n = len(LECTURE.steps)
    at = open_app(query={"lecture": "attention", "step": str(n)})
    assert _panel_step(at).endswith(f"step {n} of {n}")
    assert at.button(key="lecture_next").disabled and not at.button(key="lecture_back").disabled


@pytest.mark.parametrize("query, says", [({"lecture": "no-such-lecture", "step": "1"}, "There is no lecture"),
                                         ({"lecture": "attention", "step": "99"}, "has steps 1 to 10"),
                                         ({"lecture": "attention", "step": "two"}, "has steps 1 to 10")])
def test_a_wrong_lecture_or_step_says_so(query, says):
    at = open_app(query=query)
    assert not at.exception
    assert any(says in w.value for w in at.warning), [w.value for w in at.warning]
    assert not any(" · step " in c.value for c in at.caption)


def test_leaving_removes_the_lecture_from_the_url_and_keeps_the_page():
    at = open_app(query={"lecture": "attention", "step": "1"})
    _press(at, "lecture_leave")
    assert "lecture" not in at.query_params and "step" not in at.query_params
    assert not any(" · step " in c.value for c in at.caption)
    assert at.text_input(key="explorer_text").value == LECTURE.steps[0].params["explorer_text"]


def test_a_question_reveals_its_answer_only_after_check():
    n = next(i for i, s in enumerate(LECTURE.steps, 1) if s.question and not s.question.preset)
    q = LECTURE.steps[n - 1].question
    at = open_app(query={"lecture": "attention", "step": str(n)})
    assert not any(q.why in b.value for b in [*at.success, *at.info])
    wrong = next(c for i, c in enumerate(q.choices) if i not in q.correct)
    at.radio(key=f"lecture_q_attention_{n}").set_value(wrong).run()
    assert not any(q.why in b.value for b in [*at.success, *at.info])  # picked, not yet committed
    _press(at, f"lecture_q_attention_{n}_check")
    assert any(i.value.startswith("Not quite") and q.why in i.value for i in at.info)
    at.radio(key=f"lecture_q_attention_{n}").set_value(q.choices[q.correct[0]]).run()  # another pick asks again
    assert not any(q.why in b.value for b in [*at.success, *at.info])
    _press(at, f"lecture_q_attention_{n}_check")
    assert any(b.value.startswith("Right") and q.why in b.value for b in at.success)


def test_the_start_page_links_to_the_lecture():
    at = open_app()
    links = [p for p in at.get("page_link") if "guided lecture" in p.proto.label]
    assert links and LECTURE.title in links[0].proto.label


def test_the_pages_bound_widgets_keep_their_places_with_or_without_the_panel():
    """The panel draws in a slot that is always there (share.in_slot): opening or leaving a lecture never moves a
    link-bound widget of the page (tests/test_stable_widget_paths.py says why that matters)."""
    from test_stable_widget_paths import _paths

    at = open_app(query={"lecture": "attention", "step": "1"})
    during = {k: p for k, p in _paths(at.main).items() if k.startswith("explorer_")}
    _press(at, "lecture_leave")
    after = {k: p for k, p in _paths(at.main).items() if k.startswith("explorer_")}
    assert during and during == after


def test_the_sidebars_lectures_choice_opens_step_one():
    at = open_app()
    assert not any(" · step " in c.value for c in at.caption)
    _press(at, "lecture_open_attention")
    assert _panel_step(at).endswith("step 1 of 10") and _on_page(at, "explorer")
    assert at.query_params["lecture"] == "attention" and at.query_params["step"] == "1"


def test_opening_a_lecture_that_visits_the_translator_replays_its_training_draws_in_the_background():
    """The Encoder–decoder step of the attention lecture took 5.0 s of server time on a first visit (the caption
    beside the reference replays the translator's training batches; bench/lecture_present.py), the one step over the
    1 s bar. Opening the lecture now starts that replay in a thread, so the step finds it done: here the replay is
    complete (its cache holds the shipped translator's recipe) although the Encoder–decoder page was never opened."""
    import threading

    from viz_model import checkpoint
    from viz_model.lessons import encoder_decoder as ed
    from viz_model.ui import lecture

    lec = builtin_lectures()["attention"]
    assert any(s.page == "encoder-decoder" for s in lec.steps)
    ed._replayed_draws.cache_clear()
    ed._trained_skeletons.cache_clear()
    lecture._WARMING.clear()
    at = open_app(query={"lecture": "attention", "step": "1"})
    assert not at.exception
    for t in [t for t in threading.enumerate() if t.name == "warm-translator"]:
        t.join(timeout=120)
    recipe = ed._recipe(checkpoint.read_metadata("assets/models/translate.safetensors")["metadata"])
    assert recipe is not None and ed._replayed_draws.cache_info().currsize == 1
    before = ed._replayed_draws.cache_info().hits
    assert ed.training_membership("the old dog by the river sang again", {"train_config": {
        "task": "translate", "seed": recipe[0], "batch_size": recipe[2], "grammar_size": recipe[3]},
        "steps": recipe[1]}).side != "unknown"
    assert ed._replayed_draws.cache_info().hits == before + 1  # the page's lookup is a cache hit, not a replay
