"""#39 quality bar: every step of every built-in lecture opens in AppTest, by its own link (?lecture=NAME&step=N), on
its model, with no exception and no link notice; the page draws every setting the step's view sets, with its value,
the chart the step points at, and the panel shows the step's numbers computed (no {{placeholder}} left).

One process, one AppTest per step: the models are loaded once (st.cache_resource) and shared by every step. Each
lecture's step count and the pages it visits are printed at the end of the run (pytest -rA, or the terminal summary).
"""

from __future__ import annotations

import pytest
from conftest import open_app, texts

from viz_model import lectures
from viz_model.lectures import builtin_lectures

LECTURES = builtin_lectures()
CASES = [(name, n) for name, lec in LECTURES.items() for n in range(1, len(lec.steps) + 1)]
# What ui.share.link_notices says when a link's value is dropped (out of range, not an option): none may appear
LINK_NOTICE = "is not valid here"


def _panel(at) -> list[str]:
    """The lecture panel's texts: its markdown and captions."""
    return [*texts(at.markdown), *texts(at.caption)]


def _held_as_linked(name: str, held, value) -> bool:
    """A widget's value is the one the link set. A choice's URL value is its option's label while the widget holds
    the option ("Causal (decoder)" for "causal"): such a value is checked by the link notice, which says when a
    label was not taken; numbers, switches, sentences and tabs are compared here."""
    if name.endswith(("_text", "_tab")):
        return held == value
    if isinstance(held, bool):
        return str(held).lower() == str(value).lower()
    if isinstance(held, (int, float)) and not isinstance(value, list):
        try:
            return float(held) == float(value)
        except ValueError:  # an option's label ("Scores"): a label the widget cannot take gives the link notice
            return True
    if isinstance(held, (list, tuple)) or isinstance(value, list):
        return True  # a range's two ends, a multiselect: taken whole or dropped with a notice
    return True


@pytest.mark.slow
@pytest.mark.parametrize("name, n", CASES, ids=[f"{name}-{n}" for name, n in CASES])
def test_every_step_opens_on_its_model_with_its_settings_and_numbers(name, n):
    lec = LECTURES[name]
    step = lec.steps[n - 1]
    at = open_app(query={"lecture": name, "step": str(n)}, timeout=240)
    assert not at.exception, (step.title, texts(at.exception))
    assert not [t for t in texts(at.toast) if LINK_NOTICE in t], (step.title, texts(at.toast))
    assert not [w for w in texts(at.error)], (step.title, texts(at.error))
    assert any(c == f"{lec.title} · step {n} of {len(lec.steps)}" for c in texts(at.caption))
    model = step.params.get("model_key") or lec.model
    if model:  # the lecture's model, whatever the server's default
        assert at.selectbox(key="model_key").value == model, step.title
    for param, value in step.params.items():  # the page drew each setting the link sets, with its value
        assert param in at.session_state, (step.title, param)
        held = at.session_state[param]
        assert _held_as_linked(param, held, value), (step.title, param, held, value)
    if step.page is not None:
        assert at.query_params.get("step") == str(n)
    if step.chart:
        assert at.get_by_key(step.chart) is not None, (step.title, step.chart)
    shown = "\n".join(_panel(at))
    assert "{{" not in shown and "}}" not in shown, step.title
    assert not [t for t in texts(at.caption) if "cannot be computed" in t], step.title


def test_each_lecture_visits_pages_of_the_app():
    """The closing note: each built-in lecture's steps and the pages they visit (in order of first visit)."""
    for name, lec in LECTURES.items():
        pages = list(dict.fromkeys(s.page or "(narrative only)" for s in lec.steps))
        print(f"{name}: {len(lec.steps)} steps, pages: {', '.join(pages)}")
        assert set(pages) - {"(narrative only)"} <= set(lectures.PAGE_PARAMS)
        assert len(pages) >= 6, name


def _press(at, key: str):
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, texts(at.exception)
    return at


def test_next_opens_the_next_step_on_the_lectures_model_after_the_student_picked_another():
    """The front matter's model is in every step's view: a model the student picked on one step is not kept when
    Next opens the next step (the sidebar's picker keeps its value per session, which would win over the link)."""
    lec = LECTURES["attention"]
    assert lec.model == "classroom" and all(s.params["model_key"] == "classroom" for s in lec.steps)
    at = open_app(query={"lecture": "attention", "step": "1"})
    at.selectbox(key="model_key").set_value("english").run()
    assert at.selectbox(key="model_key").value == "english"
    _press(at, "lecture_next")
    assert at.query_params["step"] == "2" and at.selectbox(key="model_key").value == "classroom"


def test_a_narrative_only_step_keeps_the_page_and_the_next_step_opens_its_own():
    lec = LECTURES["llm-basics"]
    n = next(i for i, s in enumerate(lec.steps, 1) if s.page is None and i > 1)
    before, after = lec.steps[n - 2], lec.steps[n]
    assert before.page and after.page and after.page != before.page
    at = open_app(query={"lecture": "llm-basics", "step": str(n - 1)})
    on_before = at.session_state[f"{before.page}_tab"]
    _press(at, "lecture_next")
    assert at.query_params["step"] == str(n) and any(m == f"#### {lec.steps[n - 1].title}" for m in texts(at.markdown))
    assert at.session_state[f"{before.page}_tab"] == on_before  # still the page of the step before
    _press(at, "lecture_next")
    assert at.query_params["step"] == str(n + 1)
    assert all(at.session_state[k] == v for k, v in after.params.items() if k.endswith(("_text", "_tab")))


def test_the_panel_shows_the_weights_a_traced_pass_gives(classroom):
    """The step's {{attention ...}} numbers, computed here on the full traced pass (every layer traced, not the
    one-layer pass the lesson uses), with the words found in the token list by hand."""
    import torch

    from viz_model.model_text import encode_for

    lec = LECTURES["llm-basics"]
    n, step = next((i, s) for i, s in enumerate(lec.steps, 1) if any(x.name == "attention" for x in s.numbers))
    at = open_app(query={"lecture": "llm-basics", "step": str(n)})
    shown = "\n".join(texts(at.markdown))
    for number in [x for x in step.numbers if x.name == "attention"]:
        enc = encode_for(classroom, number.arg("text"), bos=True)
        words = [t.lower() for t in enc.tokens]
        q, k = words.index(number.arg("query").lower()), words.index(number.arg("key").lower())
        with torch.no_grad():
            trace = classroom.model.eval()(torch.tensor([enc.ids]), trace=True).trace
        weight = float(trace.layers[int(number.arg("layer"))].probs[0, int(number.arg("head")), q, k])
        assert f"{weight:.2f}" in shown, (number.source, weight)
    facts = {"layers": classroom.model.config.n_layers, "heads": classroom.model.config.n_heads}
    assert all(str(v) in shown for k, v in facts.items() if any(x.name == k for x in step.numbers))
