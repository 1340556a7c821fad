"""#43 item 8: a slow first view says what it is doing, and its expensive part runs once per model for the whole
server: a second student's first view does not compute it again (counted, never timed: speed is bench/'s)."""

import contextlib

import pytest
from conftest import assert_clean, open_app


@pytest.fixture
def spinners(monkeypatch):
    """The words of every st.spinner open right now (a list, innermost last), as the script draws them."""
    import streamlit

    real, open_now = streamlit.spinner, []

    @contextlib.contextmanager
    def spinner(text="", *args, **kwargs):
        open_now.append(text)
        try:
            with real(text, *args, **kwargs):
                yield
        finally:
            open_now.pop()

    monkeypatch.setattr(streamlit, "spinner", spinner)
    return open_now


def test_the_translators_training_replay_runs_once_per_model_and_says_so(monkeypatch, spinners):
    """The Encoder–decoder opened in 6.8 s: the caption beside the reference replays the translator's training batches
    (data.sentence_pool, then the draws) with nothing on screen. It now runs under a spinner with words, once per
    model: a second student typing another sentence gets its caption from the kept replay."""
    from viz_model import data
    from viz_model.lessons import encoder_decoder as lesson

    first, second = "the old dog by the river sang again", "the children giggled when the king sang"
    assert all(data.is_translatable(t) and not data.is_heldout(t) for t in (first, second))  # both need the replay
    lesson._replayed_draws.cache_clear()
    lesson._trained_skeletons.cache_clear()
    replays, real = [], data.sentence_pool
    monkeypatch.setattr(data, "sentence_pool", lambda *a, **kw: replays.append(list(spinners)) or real(*a, **kw))
    for text in (first, second):  # two students, two new sentences
        at = open_app("app_pages/encoder_decoder.py", timeout=180, query={"ed_text": text})
        assert_clean(at)
        assert any(c.value.startswith(("In the training set", "Not held out")) for c in at.caption)
    assert len(replays) == 1, replays  # once for the model, not once per student or sentence
    assert replays[0] and "training batches" in replays[0][-1]  # while a spinner said what it was doing


def test_presenter_mode_styles_each_shown_figure_once_for_every_student(monkeypatch):
    """The Presenter-mode toggle took 4.8 s: every rerun in presenter mode made a validating copy of every chart's
    figure and restyled it (most of an Explorer rerun's server time). The styled copy is now kept with the figure,
    so another rerun, or another student on the same view, styles nothing again."""
    from viz_model.ui import chart

    calls, real = [], chart.presenter_style
    monkeypatch.setattr(chart, "presenter_style", lambda fig: calls.append(1) or real(fig))
    link = {"explorer_text": "the presenter reads the mat to the class", "presenter_mode": "true"}  # new figures
    at = open_app("app_pages/explorer.py", query=link)
    assert_clean(at)
    styled = len(calls)
    assert at.toggle(key="presenter_mode").value and styled >= len(at.get("plotly_chart")) >= 3  # Start's, then these
    at.run()
    other = open_app("app_pages/explorer.py", query=link)
    assert_clean(other)
    assert len(other.get("plotly_chart")) >= 3 and len(calls) == styled  # a rerun, a second student: none again
