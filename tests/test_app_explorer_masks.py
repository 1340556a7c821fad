"""AppTest of the Explorer and Masks pages: main widgets, live checks, awkward input, no tracebacks."""

from functools import partial

import numpy as np
import pytest
from conftest import assert_clean, named, open_tab, plotly_array, spec, texts

from viz_model.ui import widgets

arr = partial(plotly_array, dtype=float)  # NaN where Plotly sent None (a masked hole)

AWKWARD = ["", "   ", "x " * 2500, "I 😀 like <b>cats</b> &amp; <pad>", "<script>alert(1)</script>"]


@pytest.fixture(scope="module")
def explorer():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    return at


def test_explorer_shows_every_head_and_one_head_large(explorer):
    at = explorer
    assert_clean(at)
    grid = spec(at, "explorer_grid")
    heads = [t for t in grid["data"] if not t["name"].endswith("masked")]
    n_layers, n_heads = (len(at.selectbox(key=k).options) for k in ("explorer_layer", "explorer_head"))
    assert len(heads) == n_layers * n_heads
    big = named(spec(at, "explorer_head_map"), "attention")
    assert arr(big["z"]).shape[0] == len(at.dataframe[0].value.columns) - 1 >= 10  # token chips: label + T
    assert any(s.startswith("✓ Rows sum to 1, max error") for s in texts(at.success))


def test_explorer_every_pipeline_step_renders_with_its_check(explorer):
    at = open_tab(explorer, "explorer_tab", "Pipeline")
    for step in range(8):
        at.segmented_control(key="explorer_step").set_value(step).run()
        assert_clean(at)
        assert not at.error, texts(at.error)  # every recomputation check passes
    checked = {0: "Q, K, V recomputed", 1: "S recomputed", 4: "Rows sum to 1", 5: "A·V recomputed", 7: "concat·W_O"}
    for step, claim in checked.items():
        at.segmented_control(key="explorer_step").set_value(step).run()
        assert any(claim in s for s in texts(at.success)), (step, texts(at.success))


@pytest.mark.parametrize("causal, scale_scores, temperature", [(True, True, 1.0), (False, False, 0.3)])
def test_explorer_checks_one_layer_from_the_cached_arrays_exactly_like_the_trace(causal, scale_scores, temperature):
    import torch

    from viz_model.lessons import explorer as lesson
    from viz_model.ui import cache
    from viz_model.ui.models import DEFAULT_MODEL, load_model

    model = load_model(DEFAULT_MODEL).model
    ids = tuple(range(5, 25))
    mask = np.tri(len(ids), dtype=bool) if causal else np.ones((len(ids), len(ids)), dtype=bool)
    with torch.no_grad():
        out = model(torch.tensor([ids]), trace=True, attn_mask=torch.from_numpy(mask), scale_scores=scale_scores,
                    temperature=temperature)
    scale = lesson.score_scale(model, scale_scores, temperature)
    for layer in range(model.config.n_layers):
        got = cache.cached_checks(model, "test", ids, cache.mask_bits(mask), scale_scores, temperature, layer)
        assert got == lesson.pipeline_check(model, out.trace, layer, scale)


def test_explorer_knobs_rerun_the_model(explorer):
    at = open_tab(explorer, "explorer_tab", "How sharp is each row?")
    base = arr(spec(at, "explorer_entropy")["data"][0]["y"]).sum()
    at.slider(key="explorer_temp").set_value(0.1).run()
    at.toggle(key="explorer_scale").set_value(False).run()
    assert_clean(at)
    assert arr(spec(at, "explorer_entropy")["data"][0]["y"]).sum() < base  # rows saturate
    at.slider(key="explorer_temp").set_value(1.0).run()
    at.toggle(key="explorer_scale").set_value(True).run()
    at.radio(key="explorer_mask").set_value("bidirectional").run()
    assert any("off-distribution" in w for w in texts(at.warning))
    fig = spec(at, "explorer_head_map")
    assert all(t["name"] != "masked" for t in fig["data"])  # nothing blocked any more
    at.toggle(key="explorer_avg").set_value(True).run()
    assert "average of" in spec(at, "explorer_head_map")["layout"]["title"]["text"]
    at.radio(key="explorer_mask").set_value("causal").run()
    at.toggle(key="explorer_avg").set_value(False).run()
    assert_clean(at)
    open_tab(at, "explorer_tab", "Pipeline")


def test_explorer_opens_on_the_pipeline_and_runs_only_the_open_tab(explorer):
    at = open_tab(explorer, "explorer_tab", "Pipeline")
    assert at.get_by_key("explorer_step_mat") is not None
    for closed in ("explorer_bars", "explorer_entropy"):
        with pytest.raises(KeyError):
            at.get_by_key(closed)


def test_explorer_query_focus_and_bpe_explanation(explorer):
    at = open_tab(explorer, "explorer_tab", "Query focus")
    at.selectbox(key="explorer_query").set_value(1).run()
    bars = spec(at, "explorer_bars")["data"][0]
    assert bars["type"] == "bar" and bars["text"][2] == "masked"  # query 1 cannot read key 2
    at.radio(key="explorer_tokenizer").set_value("bpe").run()
    assert_clean(at)
    assert any("tokenizer it was trained with" in c for c in texts(at.caption))
    at.radio(key="explorer_tokenizer").set_value("word").run()
    open_tab(at, "explorer_tab", "Pipeline")


@pytest.mark.parametrize("text", AWKWARD, ids=["empty", "spaces", "5000-chars", "emoji-html", "script"])
def test_explorer_handles_awkward_input(explorer, text):
    at = explorer
    at.text_input(key="explorer_text").set_value(text).run()
    assert_clean(at)
    if not text.strip():
        assert any("Type at least one word" in w for w in texts(at.warning))
        assert not at.get("plotly_chart")
        return
    big = spec(at, "explorer_head_map")
    ticks = big["layout"]["yaxis"]["ticktext"]
    if len(text) > 1000:
        assert any("only the first 64" in i for i in texts(at.info)) and len(ticks) == 64
    else:
        assert all("<" not in t for t in ticks)  # escaped: shown literally, never as HTML


@pytest.fixture(scope="module")
def masks_page():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/masks.py").run()
    return at


MASK_TABS = ["Padding", "Causal ≠ sequential", "Dependency map", "Mask vs position", "Check yourself"]


def test_masks_live_proofs_pass(masks_page):
    at = masks_page
    assert_clean(at)
    ok, bad, wrong = texts(at.success), texts(at.error), texts(at.info)  # the gallery, then every tab in turn
    for label in MASK_TABS:
        open_tab(at, "masks_tab", label)
        assert_clean(at)
        ok, bad, wrong = ok + texts(at.success), bad + texts(at.error), wrong + texts(at.info)
    ok, bad, wrong = " ".join(ok), " ".join(bad), " ".join(w for w in wrong if "What goes wrong" in w)
    for claim in ("Blocked cells get weight exactly 0", "rows sum to 1", "Replacing every `<pad>`",
                  "Causal: one pass gives the same logits", "Causal: every output depends only on inputs"):
        assert claim in ok, claim
    # the methods shown going wrong on purpose are "What goes wrong" notes, not ✗ boxes (#43, item 7)
    assert bad == "" and "rows no longer sum to 1" in wrong and "one pass no longer equals the prefix runs" in wrong
    open_tab(at, "masks_tab", "Padding")


@pytest.mark.parametrize("kind", ["bidirectional", "padding", "sliding_window", "prefix_lm", "custom", "causal"])
def test_masks_gallery_applies_each_mask_to_the_model(masks_page, kind):
    at = masks_page
    at.segmented_control(key="masks_kind").set_value(kind).run()
    assert_clean(at)
    fig = spec(at, "masks_panels")
    mask = arr(named(fig, "mask")["z"])
    T = len(mask)
    lower = all(mask[i][j] == 1 for i in range(T) for j in range(i + 1))
    upper = [mask[i][j] for i in range(T) for j in range(i + 1, T)]
    if kind == "bidirectional":
        assert all(upper)
    elif kind == "sliding_window":
        assert not any(upper) and mask[T - 1][0] == 0  # the window (3) cuts the far past
    elif kind == "prefix_lm":
        assert mask[0][2] == 1 and mask[3][4] == 0  # prefix of 3 sees itself both ways, then causal
    else:
        assert lower and not any(upper)
    probs = arr(named(fig, "probs")["z"])
    assert np.allclose(np.nansum(probs, axis=1), 1, atol=1e-5)


def test_masks_window_slider_changes_the_mask(masks_page):
    at = masks_page
    at.segmented_control(key="masks_kind").set_value("sliding_window").run()
    at.slider(key="masks_window").set_value(1).run()
    mask = arr(named(spec(at, "masks_panels"), "mask")["z"])
    assert all(mask[i][j] == (1 if i == j else 0) for i in range(len(mask)) for j in range(len(mask)))
    at.segmented_control(key="masks_kind").set_value("causal").run()


def test_masks_quiz_gives_feedback_for_right_and_wrong_answers(masks_page):
    at = open_tab(masks_page, "masks_tab", "Check yourself")
    quiz = at.radio(key="masks_quiz_0")
    quiz.set_value(quiz.options[0]).run()
    assert any("Not quite" in e and "Try another" in e for e in texts(at.error))
    at.radio(key="masks_quiz_0").set_value(at.radio(key="masks_quiz_0").options[1]).run()
    assert any(s.startswith("✓ Right.") for s in texts(at.success))
    for n, right in ((1, 0), (2, 0)):
        at.radio(key=f"masks_quiz_{n}").set_value(at.radio(key=f"masks_quiz_{n}").options[right]).run()
    assert sum(s.startswith("✓ Right.") for s in texts(at.success)) == 3
    open_tab(at, "masks_tab", "Padding")


@pytest.mark.parametrize("text", AWKWARD, ids=["empty", "spaces", "5000-chars", "emoji-html", "script"])
def test_masks_handles_awkward_input(masks_page, text):
    at = masks_page
    at.text_input(key="masks_text").set_value(text).run()
    assert_clean(at)
    if not text.strip():
        assert any("Type at least one word" in w for w in texts(at.warning))
    elif len(text) > 1000:
        assert any("at most 16" in i for i in texts(at.info))
        assert len(arr(named(spec(at, "masks_panels"), "mask")["z"])) == 16


def test_coming_back_to_the_explorer_keeps_the_sentence_and_the_view(app_test):
    """The page's settings must come back with the page (persist_state="session"; before it, Streamlit dropped a
    widget's value when its page was left: the sentence box came back empty, 'Type at least one word')."""
    at = app_test("app_pages/explorer.py")
    at.selectbox(key="explorer_example").set_value(widgets.CUSTOM).run()
    at.text_input(key="explorer_text").set_value("I like cats").run()
    at.selectbox(key="explorer_layer").set_value(1).run()
    at.switch_page("app_pages/masks.py").run()
    at.switch_page("app_pages/explorer.py").run()
    assert_clean(at)
    assert at.text_input(key="explorer_text").value == "I like cats"
    assert at.selectbox(key="explorer_layer").value == 1
    assert not [w for w in texts(at.warning) if "Type at least one word" in w]
    assert arr(named(spec(at, "explorer_head_map"), "attention")["z"]).shape[0] == 4  # <bos> I like cats


def test_the_padded_lecture_sentence_is_offered_only_where_a_typed_pad_is_padding(app_test):
    """Typed specials are plain text except the Masks page's <pad>: its padded example belongs there only."""
    padded = "send report <PAD> <PAD>"
    assert padded in app_test("app_pages/masks.py").selectbox(key="masks_example").options
    assert padded not in app_test("app_pages/explorer.py").selectbox(key="explorer_example").options
