"""AppTest of the Normalization page: every tab renders; the axes figures follow the batch widgets; the padding
check shows exactly 0.0 for LayerNorm and more for BatchNorm; a button run fills the residual and pre/post-norm
charts (runs kept tiny: 2 training steps); the batch dimension shows the live model's shapes and its loss terms."""

import re
from functools import partial

import conftest
import numpy as np
import pytest
from conftest import assert_clean, plotly_array, spec, texts

from viz_model.lessons import normalization as lesson
from viz_model.ui import normalization as ui

arr = partial(plotly_array, dtype=float)  # NaN where Plotly sent None (a masked hole)

TABS = ["Which axis", "Four reasons", "Residual connections", "Pre- vs post-norm", "The batch dimension"]


@pytest.fixture(scope="module")
def page():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    return at.switch_page("app_pages/normalization.py").run()


@pytest.fixture
def tiny_steps(monkeypatch):
    """Two training steps per run: the runs' machinery, not their learning, is what an app test checks."""
    monkeypatch.setattr(ui, "STEPS", (2, *ui.STEPS))


def test_every_tab_renders(page):
    for label in TABS:
        at = open_tab(page, label)
        assert_clean(at)
        assert at.title[0].value == "Normalization"
    open_tab(page, TABS[0])


def test_axes_show_one_figure_per_norm_with_the_batch_shape(page):
    at = open_tab(page, "Which axis")
    assert_clean(at)
    N, T, d = (at.select_slider(key=k).value for k in ("norm_N", "norm_T", "norm_d"))
    for kind in ("layernorm", "batchnorm", "rmsnorm"):
        fig = spec(at, f"norm_groups_{kind}")
        assert arr(fig["data"][0]["z"]).shape == (N * T, d)
        boxes = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
        assert len(boxes) == (d if kind == "batchnorm" else N * T)  # a column per feature vs a row per token
    ln = arr(spec(at, "norm_groups_layernorm")["data"][0]["z"])
    assert np.abs(ln.mean(1)).max() < 1e-5  # the chart's own rows: mean 0 ...
    assert np.abs(ln.var(1) - 1).max() < 1e-4  # ... variance 1 (to ε)
    passed = " ".join(texts(at.success))
    assert "✓ LayerNorm: every token's mean over its features is 0" in passed
    assert "✓ BatchNorm: every feature's mean over all N×T tokens is 0" in passed
    assert any("with ε = 1e-12 it is 1 to within" in c for c in texts(at.caption))
    at.select_slider(key="norm_d").set_value(4).run()
    at.number_input(key="norm_seed").set_value(7).run()
    assert arr(spec(at, "norm_groups_batchnorm")["data"][0]["z"]).shape == (N * T, 4)
    assert not np.allclose(arr(spec(at, "norm_groups_layernorm")["data"][0]["z"])[:, :4], ln[:, :4])
    at.select_slider(key="norm_d").set_value(8).run()
    at.number_input(key="norm_seed").set_value(0).run()


def test_padding_changes_batchnorm_for_sample_1_and_layernorm_by_exactly_zero(page):
    at = open_tab(page, "Four reasons")
    assert_clean(at)
    table = at.table[0].value
    padding = table.loc["padding in another sample"]
    assert padding["LayerNorm"] == "0.0 (exactly)" and padding["RMSNorm"] == "0.0 (exactly)"
    assert float(padding["BatchNorm"]) > 0
    assert (table["per-token norms win?"] == "✓").all()
    assert table.loc["train vs eval", "LayerNorm"] == "0.0 (exactly)" and float(table.loc["train vs eval",
                                                                                         "BatchNorm"]) > 0
    assert any("Expected more than 1 value per channel when training" in c.value for c in at.code)  # torch's own
    bars = {t["name"]: t for t in spec(at, "norm_padding_chart")["data"] if t["xaxis"] == "x"}
    before = bars["no padding"]["y"]
    at.slider(key="norm_pad").set_value(3).run()
    bars = {t["name"]: t for t in spec(at, "norm_padding_chart")["data"] if t["xaxis"] == "x"}
    assert bars["no padding"]["y"] == before and "3 padding positions in sample 2" in bars
    assert bars["3 padding positions in sample 2"]["y"] != before  # the batch mean moved with the padding


def test_residual_button_fills_gradients_and_loss_curves(page, tiny_steps):
    at = open_tab(page, "Residual connections")
    at.select_slider(key="norm_res_steps").set_value(2).run()
    assert not at.get("plotly_chart") and "Nothing runs until you click" in " ".join(texts(at.caption))
    at.button(key="norm_res_go").click().run()
    assert_clean(at)
    stream = {t["name"]: t["y"] for t in spec(at, "norm_res_stream")["data"]}
    g_with, g_without = stream["with the residual x + F(x)"], stream["without it: F(x) only"]
    assert len(g_with) == len(g_without) == 12
    assert max(g_with) / min(g_with) < lesson.FLAT_FACTOR and g_without[0] < lesson.VANISH_FACTOR * g_without[-1]
    assert spec(at, "norm_res_stream")["layout"]["yaxis"]["type"] == "log"
    losses = [t["y"] for t in spec(at, "norm_res_loss")["data"]]
    assert [len(y) for y in losses] == [2, 2] and all(y > 0 for ys in losses for y in ys)
    assert any("without it, block 1 gets" in s.lower() for s in texts(at.success) + texts(at.error))
    assert all(b.key != "norm_res_go" for b in at.button)  # the result is kept: no button to run it again


def test_placement_button_fills_four_curves_and_links_the_train_ablation(page, tiny_steps):
    at = open_tab(page, "Pre- vs post-norm")
    at.select_slider(key="norm_place_steps").set_value(2).run()
    at.selectbox(key="norm_place_layers").set_value(2).run()
    link = at.get("page_link")[0].proto
    assert link.page.endswith("train") and "tab=Compare" in link.query_string
    at.button(key="norm_place_go").click().run()
    assert_clean(at)
    curves = {t["name"]: t["y"] for t in spec(at, "norm_place_loss")["data"]}
    assert sorted(curves) == ["post-norm, warm-up 0", "post-norm, warm-up 1", "pre-norm, warm-up 0",
                              "pre-norm, warm-up 1"]
    assert all(len(y) == 2 for y in curves.values())
    assert curves["pre-norm, warm-up 0"][0] == curves["pre-norm, warm-up 1"][0]  # same init, same first batch
    grads = {t["name"]: t["y"] for t in spec(at, "norm_place_grads")["data"]}
    assert len(grads["pre-norm"]) == len(grads["post-norm"]) == 2
    shown = texts(at.success) + texts(at.error)
    assert sum(s.startswith(("✓", "✗")) for s in shown) >= 5  # every claim is a measured row
    assert "Why the final LayerNorm exists only in pre-norm" in " ".join(texts(at.markdown))
    assert len(at.table[0].value) == 4


def test_batch_dimension_shows_live_shapes_and_loss_terms(page):
    at = open_tab(page, "The batch dimension")
    assert_clean(at)
    shapes = " ".join(texts(at.markdown))
    assert "(N, H, T, d_k) = (2, 4, 7, 32)" in shapes  # the default classroom model: 4 heads of d_k 32, <bos> + 6
    passed = " ".join(texts(at.success))
    assert "changes sample 1's logits by 0.0 (exactly)" in passed
    assert "is the model's loss on the batch" in passed
    losses = at.dataframe[0].value
    assert list(losses.index) == ["sample 1", "sample 2"]
    scored = [float(v.split(" (")[0]) for v in losses.to_numpy().ravel() if v != "—"]
    assert losses.loc["sample 1", "0→1"].endswith("(The)")  # <bos> predicts "The": the target is named
    assert all(v >= 0 for v in scored) and len(scored) > 5  # cross-entropy: never negative
    shown = re.search(r"The mean of the (\d+) scored terms, ([\d.]+), is the model's loss on the batch, ([\d.]+)",
                      passed)
    assert int(shown.group(1)) == len(scored) and float(shown.group(2)) == pytest.approx(np.mean(scored), abs=1e-3)
    assert float(shown.group(2)) == pytest.approx(float(shown.group(3)), abs=1e-4)
    first = spec(at, "norm_batch_matrices")["data"]
    at.selectbox(key="norm_other").set_value("I like cats").run()
    assert_clean(at)
    second = spec(at, "norm_batch_matrices")["data"]
    np.testing.assert_array_equal(arr(first[0]["z"]), arr(second[0]["z"]))  # sample 1: the same T×T, bit for bit
    assert arr(first[1]["z"]).tolist() != arr(second[1]["z"]).tolist()


def open_tab(at, label: str):
    return conftest.open_tab(at, "norm_tab", label)
