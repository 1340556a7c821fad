"""#39 item 6 in the app: on every page a leader's "Ask the class" lists the page's preset, and Ask puts the question
to the class with the model's own answer computed on the view the leader shows; a student alone meets a lecture
step's `ask: preset NAME` as a question to answer first, and sees the model's answer beside theirs after Check."""

from __future__ import annotations

import pytest
from conftest import ROOT, open_app

from viz_model.lecture_files import ENV_VAR
from viz_model.lessons import presets as P
from viz_model.runtime.class_mode import ClassStore

PAGE_FILES = {"start": "start", "explorer": "explorer", "masks": "masks", "qkv": "qkv", "sinusoidal": "sinusoidal",
              "rope": "rope", "encoder": "encoder", "encoder-decoder": "encoder_decoder", "recurrence": "recurrence",
              "normalization": "normalization", "train": "train", "generate": "generate", "cost": "cost",
              "logit-lens": "lens", "attribution": "attribution", "sinks": "sinks"}


def _view(at) -> P.Inputs:
    """The leader's view as the test reads it: the session's model and every setting the page drew."""
    from viz_model.ui.models import load_model

    state = at.session_state.to_dict()
    return P.Inputs(load_model(state["model_key"], "cpu"), state, lambda key: load_model(key, "cpu"))


@pytest.mark.parametrize("page", list(PAGE_FILES))
def test_a_leader_asks_the_pages_preset_and_the_class_gets_the_models_answer(page, class_env):
    at = open_app()
    at.text_input(key="class_key").input("s3cret").run()
    at.toggle(key="class_lead").set_value(True).run()
    code = at.session_state["_class_code"]
    if page != "start":
        at.switch_page(f"app_pages/{PAGE_FILES[page]}.py").run()
    (name, row), *_ = P.presets_for(page).items()
    ask = at.selectbox(key="class_ask_kind")
    assert row.label in ask.options and ask.options[-1] == "Free question"
    ask.set_value(row.label).run()
    at.button(key="class_ask").click().run()
    assert not at.exception
    q = ClassStore(class_env).get(code).question
    assert q is not None, [e.value for e in at.error]
    want = P.compute(name, _view(at))  # the same view, computed again here
    assert (q.prompt, q.answer["correct"]) == (want.prompt, want.answer["correct"])
    assert len(q.choices) == len(want.choices) and q.answer["why"] == want.answer["why"]
    assert any(f"Question {q.qid}" in m.value for m in at.markdown)


LECTURE = """---
title: Presets alone
---

## A window of two

view: /masks?masks_kind=Sliding+window&masks_window=2
ask: preset masks_visible

Each query reads itself and the token before it.

## What comes next

view: /generate?generate_text=The+cat+sat+on+the
ask: preset generate_next

The model's own guess.
"""


@pytest.fixture
def lecture_dir(tmp_path, monkeypatch):
    (tmp_path / "presets-alone.md").write_text(LECTURE)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    return tmp_path


def _plain(text: str) -> str:
    """Text as the student reads it: md_text escapes every punctuation mark for Markdown."""
    return text.replace("\\", "")


def _said(at) -> list[str]:
    return [_plain(x.value) for x in [*at.info, *at.success] if "You picked" in x.value]


def _radio(at):
    return next(r for r in at.radio if (r.key or "").startswith("lecture_q_presets-alone_"))


def test_a_students_preset_question_in_a_lecture_asks_first_then_shows_the_models_answer_beside_theirs(lecture_dir):
    at = open_app(query={"lecture": "presets-alone", "step": "1"})
    assert not at.exception
    radio = _radio(at)
    # the step's own settings (a window of 2), though the page's slider is drawn only after the panel
    assert radio.label.startswith("Under the Sliding window mask, how many tokens can row 3")
    assert radio.value is None and not _said(at)
    check = next(b for b in at.button if b.key == f"{radio.key}_check")
    assert check.disabled  # nothing picked: nothing to check
    radio.set_value(radio.options.index("4")).run()
    next(b for b in at.button if b.key == f"{radio.key}_check").click().run()
    (said,) = _said(at)
    assert said.startswith("You picked “4”; the model's own answer is “2”. Row 3 may read 2 of the 7 keys")
    assert said in [_plain(i.value) for i in at.info]  # not the success colour: the model disagrees
    _radio(at).set_value(1).run()  # "2": another pick asks again, then Check agrees with the model
    assert not _said(at)
    next(b for b in at.button if b.key == f"{radio.key}_check").click().run()
    (said,) = _said(at)
    assert said.startswith("You picked “2”, as the model does.") and said in [_plain(s.value) for s in at.success]
    assert not at.exception


def test_a_lecture_step_on_generate_asks_the_models_next_token(lecture_dir):
    at = open_app(query={"lecture": "presets-alone", "step": "2"})
    radio = _radio(at)
    assert radio.label == "Which token will the model write next after “The cat sat on the”?"
    want = P.compute("generate_next", _view(at))
    radio.set_value(want.answer["correct"][0]).run()
    next(b for b in at.button if b.key == f"{radio.key}_check").click().run()
    assert _said(at)[0].startswith(f"You picked “{want.choices[want.answer['correct'][0]]}”, as the model does.")
    assert not at.exception


def test_the_registry_names_every_page_of_the_app_file():
    assert set(PAGE_FILES) == {row.page for row in P.PRESETS.values()}
    assert all((ROOT / "app_pages" / f"{f}.py").exists() for f in PAGE_FILES.values())
