"""AppTest of Attention vs attribution (/attribution): the default view on the English model (the four methods'
heatmap and their correlations, the sentences, every check ✓), a changed target and head, bad input (empty, one
token, longer than the context, odd unicode), the classroom model, and a GPT-2-shaped folder."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_clean, open_app, plotly_array, spec, texts

from viz_model import hf
from viz_model.lessons import attribution as lesson
from viz_model.lessons import presets as P
from viz_model.model_text import encode_for, uses_bos
from viz_model.ui import models

PAGE = "app_pages/attribution.py"


def open_on(model: str):
    """The page on a model named in the link (a link names it by its picker label)."""
    titles = {e.key: e.title for e in models.available_models(("transformer",))}
    return open_app(PAGE, timeout=120, query={"model_key": titles.get(model, model)})


@pytest.fixture(scope="module")
def at():
    return open_on("english")


def heat(at) -> tuple[np.ndarray, list[str], list[str]]:
    fig = spec(at, "attribution_methods")
    t = fig["data"][0]
    return (np.asarray(plotly_array(t["z"]), dtype=float), fig["layout"]["yaxis"]["ticktext"],
            fig["layout"]["xaxis"]["ticktext"])


def test_default_view_shows_four_methods_their_agreement_and_passing_checks(at, english_model):
    assert_clean(at)
    z, rows, cols = heat(at)
    enc = encode_for(english_model, lesson.DEFAULT_TEXT, bos=uses_bos(english_model))
    assert len(rows) == len(enc.ids) - 1 and z.shape == (len(rows), 5)  # the typed tokens; the start token left out
    assert rows[0] == "1  the" and cols == ["head 0", "mean of heads", "rollout", "grad × input", "occlusion"]
    assert np.allclose(np.abs(z).max(0), 1.0)  # each method divided by its largest |score|
    rho = np.asarray(plotly_array(spec(at, "attribution_agreement")["data"][0]["z"]), dtype=float)
    assert rho.shape == (5, 5) and np.isnan(np.diag(rho)).all() and np.allclose(rho, rho.T, equal_nan=True)
    md = texts(at.markdown)
    assert any("“was”" in m and "most probable" in m for m in md), md
    assert any(m.startswith("On these 12 tokens") for m in md) and any("The top token by each method" in m for m in md)
    checks = texts(at.success)
    assert len(checks) == 3 and all(c.startswith("✓") for c in checks), checks
    assert any("Jain & Wallace (2019)" in i and "Wiegreffe & Pinter (2019)" in i for i in texts(at.info))
    assert at.selectbox(key="attribution_layer").value == 3 and at.selectbox(key="attribution_head").value == 0


def test_another_target_and_head_change_what_is_explained(at):
    z0, _, _ = heat(at)
    at.selectbox(key="attribution_target").set_value(1).run()
    assert_clean(at)
    assert any("“is”" in m and "number 2" in m for m in texts(at.markdown))
    z1, _, _ = heat(at)
    assert not np.allclose(z0[:, 3:], z1[:, 3:])  # gradient and occlusion follow the target
    assert np.allclose(z0[:, :3], z1[:, :3])      # attention does not depend on the target at all
    at.selectbox(key="attribution_head").set_value(2).run()
    z2, _, cols = heat(at)
    assert cols[0] == "head 2" and not np.allclose(z1[:, 0], z2[:, 0])
    # the class question answers on this view: the picked target, by occlusion
    p = P.compute("attribution_occlusion", P.Inputs(models.load_model("english", "cpu"), at.session_state.to_dict()))
    assert "“is”" in p.prompt
    occ = z2[:, 4]
    assert p.answer["correct"] == [int(np.argmax(occ))]
    at.selectbox(key="attribution_target").set_value(0)
    at.selectbox(key="attribution_head").set_value(0).run()


@pytest.mark.parametrize("text, kind, words", [
    ("", "warning", "empty"),
    ("cat", "info", "nothing to attribute"),
    ("word " * 400, "info", "only the first 64 are used"),
])
def test_bad_input_says_why_in_a_sentence(text, kind, words):
    at = open_on("english")
    at.text_input(key="attribution_text").input(text).run()
    assert_clean(at)
    assert any(words in m for m in texts(getattr(at, kind))), (texts(at.warning), texts(at.info))


def test_odd_unicode_and_html_looking_tokens_show_as_typed():
    at = open_on("english")
    at.text_input(key="attribution_text").input("<b>x</b> 🙂 e\u0301t\u00e9 \u202e and").run()
    assert_clean(at)
    _, rows, _ = heat(at)
    assert any("&lt;" in r for r in rows) and not any("<b>" in r for r in rows)


def test_the_classroom_model_runs_the_page():
    at = open_on("classroom")
    assert_clean(at)
    z, rows, _ = heat(at)
    assert z.shape == (len(rows), 5) and all(c.startswith("✓") for c in texts(at.success))


def test_a_gpt2_shaped_folder_runs_the_page(model_folders):
    root = next(iter(model_folders.values())).parent
    models._read_folders.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(hf.ENV_VAR, str(root))
            at = open_on("tiny-gpt2")
            assert_clean(at)
            assert at.session_state["model_key"] == "tiny-gpt2"
            z, rows, _ = heat(at)
            assert z.shape == (len(rows), 5)  # GPT-2 adds no start token: every typed token is a row
            assert all(c.startswith("✓") for c in texts(at.success)), texts(at.success)
    finally:
        models._read_folders.cache_clear()
