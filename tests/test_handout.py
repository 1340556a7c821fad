"""#39 (item 8): a lecture exported as one static HTML file: every step's title, narrative, question and charts,
computed on the lecture's model at export and dated, plotly.js inlined once, nothing a lecture file says ever
becoming markup, and every chart's numbers the ones the live page shows for the same step."""

from __future__ import annotations

import datetime as dt
import html
import json
import re

import numpy as np
import pytest
from conftest import HANDOUT_NOW, open_app
from plotly.offline import get_plotlyjs

from viz_model.figures.export import _typed
from viz_model.handout.build import build_handout, chart_id, main, shipped_loader
from viz_model.handout.views import VIEWS, Models, NotInHandout, figures_for
from viz_model.lectures import PAGE_PARAMS, builtin_lectures, load_lecture

LECTURES = builtin_lectures()
NOW = dt.datetime.fromisoformat(HANDOUT_NOW)
PLOTLY_HEADER = re.compile(r"\* plotly\.js v\d")


@pytest.fixture(scope="module")
def load():
    return shipped_loader()


def _models(load, lec) -> Models:
    key = lec.model or "classroom"
    return Models(key, load(key), load)


@pytest.fixture(scope="module")
def handouts(handout_files) -> dict[str, str]:
    """Every built-in lecture's handout, dated NOW (conftest.handout_files: built once per run)."""
    return {name: path.read_text(encoding="utf-8") for name, path in handout_files.items()}


def plotted(text: str, div_id: str) -> list[dict]:
    """The traces the file hands Plotly.newPlot for the div `div_id`, as written in the file."""
    found = re.search(r'Plotly\.newPlot\(\s*"' + re.escape(div_id) + r'",\s*', text)
    assert found, f"no chart {div_id} in the handout"
    return json.JSONDecoder().raw_decode(text, found.end())[0]


def _values(v) -> np.ndarray:
    arr = np.asarray(_typed(v), dtype=object)
    try:
        return np.where(arr == None, np.nan, arr).astype(float)  # noqa: E711  (JSON null is a NaN cell)
    except (TypeError, ValueError):
        return arr


def assert_same_traces(ours: list[dict], live: list[dict], what: str) -> None:
    assert len(ours) == len(live), what
    for i, (a, b) in enumerate(zip(ours, live)):
        assert a.get("type", "scatter") == b.get("type", "scatter"), what
        for field in ("x", "y", "z", "text"):
            if field not in a and field not in b:
                continue
            x, y = _values(a.get(field)), _values(b.get(field))
            assert x.shape == y.shape, f"{what}: trace {i} {field}"
            if x.dtype == float and y.dtype == float:
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7, equal_nan=True, err_msg=f"{what} {i} {field}")
            else:
                assert x.tolist() == y.tolist(), f"{what}: trace {i} {field}"


def test_the_page_table_covers_every_page():
    assert set(VIEWS) == set(PAGE_PARAMS)


def test_plotly_js_is_inlined_once_and_nothing_comes_from_a_network(handouts):
    for name, text in handouts.items():
        assert text.count(get_plotlyjs()) == 1, name
        assert len(PLOTLY_HEADER.findall(text)) == 1, name
        ours = text.replace(get_plotlyjs(), "")  # what the handout adds around the library
        assert not re.search(r"<script[^>]+src=|<link[^>]+href=|<img[^>]+src=|<iframe", ours), name
        assert "cdn.plot.ly" not in ours and "mathjax" not in ours.lower(), name


def test_every_step_is_in_the_handout_with_its_title_and_the_date_and_model(handouts):
    for name, text in handouts.items():
        lec = LECTURES[name]
        assert f"<h1>{html.escape(lec.title)}</h1>" in text
        assert "computed on 2026-12-05 at 09:30 with the model “" + (lec.model or "classroom") + "”" in text
        for n, step in enumerate(lec.steps, 1):
            assert f'<section id="step-{n}">' in text and f"<h2>{html.escape(step.title)}</h2>" in text, (name, n)


def test_a_written_question_hides_its_answer_in_details(handouts):
    asked = [(name, n, s.question) for name, lec in LECTURES.items() for n, s in enumerate(lec.steps, 1)
             if s.question is not None and not s.question.preset]
    assert asked
    for name, n, q in asked:
        section = handouts[name].split(f'<section id="step-{n}">')[1].split("</section>")[0]
        before, details = section.split("<details>")
        assert html.escape(q.prompt) in before and all(f"<li>{html.escape(c)}</li>" in before for c in q.choices)
        answer = details.split("</summary>")[1]
        assert all(html.escape(f"“{q.choices[i]}”") in answer for i in q.correct)
        assert html.escape(q.why or "") in answer


HOSTILE = """---
title: </title><script>alert("title")</script>
model: classroom
---

Intro with `<script>alert("intro")</script>` in code.

## A step about `<script>` tags

view: /explorer?explorer_text=%3C%2Fscript%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E+cat&explorer_layer=1
ask: Is `<b>` bold here? | *no | yes

Narrative with `</script><script>alert("narrative")</script>` and a [link](/rope).
"""


def test_nothing_a_lecture_file_says_becomes_markup(load):
    lec = load_lecture(HOSTILE)
    text = build_handout(lec, _models(load, lec), now=NOW, app_url="http://class.example:8501")
    charts = len(figures_for("explorer", lec.steps[0].params, _models(load, lec)))
    body = text.replace(get_plotlyjs(), "")
    assert body.count("<script") == 1 + charts and body.count("</script>") == 1 + charts  # plotly.js + each chart's
    assert "<script>alert" not in body and "<b>" not in body
    assert "&lt;/title&gt;&lt;script&gt;" in text  # the title, escaped
    assert '<a href="http://class.example:8501/rope">link</a>' in text  # a link to a page goes to the app


def test_a_view_the_handout_does_not_draw_links_to_it_and_placeholders_are_computed(load):
    lec = load_lecture("# Two views\n\n## Timing\n\nview: /cost\n\nThe model has {{params}} parameters.\n\n"
                       "## Only words\n\nNo view here.\n")
    models = Models("classroom", load("classroom"), load)
    text = build_handout(lec, models, lecture_name=None, now=NOW, app_url="http://host:8501")
    first = text.split('<section id="step-1">')[1].split("</section>")[0]
    assert "The handout does not draw this view" in first and '<a href="http://host:8501/cost">' in first
    assert f"The model has {models.main.model.num_params():,} parameters." in first and "{{" not in first
    second = text.split('<section id="step-2">')[1]
    assert "plotly-graph-div" not in second and "open this view" not in second  # narrative only: no view, no link
    with pytest.raises(NotInHandout):
        figures_for("train", {}, models)


@pytest.mark.slow
def test_the_numbers_are_the_ones_the_live_page_shows(handouts):
    """Each drawn chart of each built-in lecture's step, against the same chart on the step's page in AppTest."""
    compared, seen = 0, set()
    for name, lec in LECTURES.items():
        for n, step in enumerate(lec.steps, 1):
            view = (step.page, str(sorted((k, v) for k, v in step.params.items() if k.endswith("_tab"))))
            if step.page is None or view in seen or f'"{chart_id(n, "")}' not in handouts[name]:
                continue  # one step of each page and tab: the same code draws the others
            seen.add(view)
            at = open_app(query={"lecture": name, "step": str(n)}, timeout=300)  # a busy 2-core machine
            assert not at.exception, (name, n)
            keys = re.findall(r'Plotly\.newPlot\(\s*"' + re.escape(chart_id(n, "")) + r'([\w-]+)"', handouts[name])
            for key in keys:
                try:
                    live = json.loads(at.get_by_key(key).proto.spec)["data"]
                except KeyError:  # drawn behind a button on the page (a training run): nothing to compare with
                    continue
                assert_same_traces(plotted(handouts[name], chart_id(n, key)), live, f"{name} step {n} {key}")
                compared += 1
    assert compared >= 8


def test_the_command_writes_the_handout(tmp_path, capsys):
    src = tmp_path / "one.md"
    src.write_text("# Positions\n\n## Sines\n\nview: /sinusoidal?sinusoidal_tab=Similarity\n\nClocks.\n")
    out = tmp_path / "one.html"
    assert main([str(src), str(out), "--model", "classroom"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<h2>Sines</h2>" in text and 'id="step1-sinusoidal_sim"' in text and text.count(get_plotlyjs()) == 1
    assert main(["no-such-lecture", str(tmp_path / "x.html")]) == 2
    assert "no lecture file or built-in lecture" in capsys.readouterr().err


@pytest.mark.slow
def test_the_lecture_panel_makes_the_handout_then_offers_it():
    at = open_app(query={"lecture": "attention", "step": "2"}, timeout=300)
    assert not at.get("download_button") or all(b.proto.label != "Download the handout (HTML)"
                                                 for b in at.get("download_button"))
    at.button(key="lecture_handout").click().run()
    assert not at.exception
    offered = [b for b in at.get("download_button") if b.proto.label == "Download the handout (HTML)"]
    assert len(offered) == 1 and offered[0].proto.url  # the file is served by Streamlit's media store
    assert not any(b.key == "lecture_handout" for b in at.button)  # the download took the button's place
    next(b for b in at.button if b.key == "lecture_next").click().run()  # another step: the same handout, kept
    assert not at.exception and at.query_params["step"] == "3"
    assert [b.proto.label for b in at.get("download_button")].count("Download the handout (HTML)") == 1
