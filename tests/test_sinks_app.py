"""AppTest of the Attention sinks page (/sinks): the default view draws the three charts with the lesson's numbers
and every check passes; changed settings redraw the streaming view; bad input (no window, a model with learned
positions, an encoder) says why in a sentence; the English model's default view reports that the sinks help."""

import json

import numpy as np
import pytest
from conftest import open_app, plotly_array
from test_app_real_models import app, folders  # noqa: F401  (a fixture)

from viz_model.heads import _probs, positional_scores
from viz_model.lessons import sinks as lesson

PAGE = "app_pages/sinks.py"


def spec(at, key: str) -> dict:
    return json.loads(at.get_by_key(key).proto.spec)


def texts(at) -> tuple[list[str], list[str]]:
    return [s.value for s in at.success], [e.value for e in at.error]


@pytest.fixture(scope="module")
def at():
    return open_app(PAGE, timeout=240)


def test_default_view_draws_the_share_map_the_losses_and_the_stream(at):
    assert not at.exception, at.exception
    ok, bad = texts(at)
    assert not bad and len(ok) == 4 and all(c.startswith("✓") for c in ok), (ok, bad)
    assert any("renormalised" in c for c in ok) and any("ordinary forward pass" in c for c in ok)
    # the map's numbers, against heads.positional_scores on the same held-out texts
    from test_presets import model

    ck = model("classroom")
    seqs = lesson.heldout_ids(ck, "wordnet")
    ref = positional_scores(_probs(ck.model, seqs, ck.model.config.pad_id), [len(s) for s in seqs])["first-token"]
    z = np.asarray(plotly_array(spec(at, "sinks_share_chart")["data"][0]["z"]), dtype=float)
    np.testing.assert_allclose(z, ref.numpy(), atol=1e-5)
    bars = spec(at, "sinks_loss_chart")["data"][0]
    assert list(bars["y"]) == ["as is", "first token dropped", "first token hidden, rows renormalised"]
    lines = spec(at, "sinks_stream_chart")["data"]
    assert len(lines) == 3 and lines[0]["name"].startswith("W=64")  # the classroom model's whole context
    table = next(d.value for d in at.dataframe if "recompute" in d.value.columns)
    assert list(table["window"]) == [64]
    assert any(m.value.startswith("Measured on this stream: window 64") for m in at.markdown)


def test_changed_windows_and_sinks_redraw_the_stream(at):
    at.multiselect(key="sinks_windows").set_value([16, 32])
    at.slider(key="sinks_n").set_value(1)
    at.radio(key="sinks_stream").set_value("packed").run()
    assert not at.exception
    lines = spec(at, "sinks_stream_chart")["data"]
    assert [t["name"] for t in lines][:3] == ["W=16: window alone", "W=16: window + first 1 kept",
                                              "W=16: recompute the window"]
    assert len(lines) == 6
    table = next(d.value for d in at.dataframe if "recompute" in d.value.columns)
    assert list(table["window"]) == [16, 32] and "window + the first token" in table.columns


def test_no_window_picked_says_so(at):
    at.multiselect(key="sinks_windows").set_value([]).run()
    assert not at.exception
    assert any("Pick at least one cache size" in i.value for i in at.info)
    with pytest.raises(KeyError):
        at.get_by_key("sinks_stream_chart")  # the stream is not drawn; the map and the losses are
    assert len(at.get("plotly_chart")) == 2


@pytest.mark.parametrize("key, says, charts", [
    ("enc-learned", "RoPE, ALiBi or no positions", 2),  # the map and the losses, no stream
    ("encoder-mlm", "This lesson is about decoders", 0),
])
def test_a_model_the_lesson_cannot_stream_says_why(key, says, charts):
    app = open_app(timeout=240)
    app.session_state["model_key"] = key
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert any(says in i.value for i in app.info), [i.value for i in app.info]
    assert len(app.get("plotly_chart")) == charts


def test_the_english_models_default_view_finds_sinks_help_on_one_long_text():
    app = open_app(timeout=300)
    app.session_state["model_key"] = "english"
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    ok, bad = texts(app)
    assert not bad and len(ok) == 4
    table = next(d.value for d in app.dataframe if "recompute" in d.value.columns)
    assert list(table["window"]) == [64]
    alone, sinks = float(table["window alone"][0]), float(table["window + the first 4 tokens"][0])
    assert sinks < 0.9 * alone  # measured: about 3x lower on this stream
    assert any("lowers perplexity" in m.value for m in app.markdown)


@pytest.mark.parametrize("name, streams", [("tiny-llama", True), ("tiny-gpt2", False)])
def test_the_page_runs_on_hugging_face_folders(folders, name, streams):  # noqa: F811  (the fixture)
    """tiny-llama: RoPE with llama3 scaling and 2 K/V heads for 4 query heads, so the cache's unrotated keys and
    their slots are checked on grouped heads (every check passes); tiny-gpt2: learned positions, no stream."""
    at = app(folders, name, PAGE)
    assert not at.exception, at.exception
    ok, bad = texts(at)
    assert not bad and all(c.startswith("✓") for c in ok), (ok, bad)
    assert len(ok) == (4 if streams else 1)
    assert len(at.get("plotly_chart")) == (3 if streams else 2)
    if not streams:
        assert any("learned positions" in i.value for i in at.info)


def test_a_link_with_a_window_larger_than_the_context_and_zero_sinks_opens_the_defaults():
    app = open_app(PAGE, timeout=240, query={"sinks_windows": "1000", "sinks_n": "0", "sinks_len": "9"})
    assert not app.exception and not [e.value for e in app.error]
    assert app.multiselect(key="sinks_windows").value == [64] and app.slider(key="sinks_n").value == 4
    table = next(d.value for d in app.dataframe if "recompute" in d.value.columns)
    assert list(table["window"]) == [64]
