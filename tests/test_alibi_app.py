"""AppTest of the RoPE page's ALiBi tab: the bias of every head is drawn with its slopes, its checks pass, the
sliders change it, and the shipped ALiBi model's scores carry the bias."""

import json
import math

import numpy as np
import pytest
from conftest import ROOT, one_line, open_tab, plotly_array

from viz_model.positional import alibi_slopes


@pytest.fixture(scope="module")
def at():
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    app.run()
    app.switch_page("app_pages/rope.py").run()
    open_tab(app, "rope_tab", "ALiBi")
    return app


def heatmaps(app) -> list[dict]:
    spec = json.loads(app.get_by_key("rope_alibi_fig").proto.spec)
    return [t for t in spec["data"] if t["name"].startswith("head ")], spec["layout"]


def test_alibi_tab_draws_one_bias_heatmap_per_head_with_its_slope(at):
    assert not at.exception and not at.error
    traces, layout = heatmaps(at)
    assert [t["name"] for t in traces] == [f"head {h}" for h in range(4)]  # 4 heads by default
    slopes = alibi_slopes(4).numpy()
    for h, t in enumerate(traces):
        z = np.asarray(plotly_array(t["z"]), dtype=float)  # (12, 12), NaN above the diagonal (causal)
        i, j = 7, 3
        assert math.isclose(z[i, j], -slopes[h] * (i - j), rel_tol=1e-12)
        assert np.isnan(z[3, 7])  # a later key: blocked by the decoder's mask, never used
    titles = [one_line(a["text"]) for a in layout["annotations"]]
    assert titles[:4] == ["head 0 · m = 0.25", "head 1 · m = 0.0625", "head 2 · m = 0.01562", "head 3 · m = 0.003906"]
    assert one_line(layout["xaxis4"]["title"]["text"]) == "key position j"
    assert one_line(layout["yaxis"]["title"]["text"]) == "query position i"
    checks = [s.value for s in at.success]
    assert any("−m_h × distance" in c for c in checks) and any("2^(−8/4)" in c for c in checks)
    assert all(c.startswith("✓") for c in checks)


def test_the_shipped_alibi_model_checks_scores_with_minus_without_equal_the_bias(at):
    checks = [s.value for s in at.success]
    assert any("scores with ALiBi minus" in c for c in checks), checks
    assert any("Q, K and V are identical" in c for c in checks)
    reach = next(d.value for d in at.dataframe if "mean distance attended" in d.value.columns)
    assert len(reach) == 4 and (reach["mean distance attended"] >= 0).all()
    assert not at.info  # the model was found: no "No ALiBi model" note


def test_sliders_change_the_heads_and_an_encoder_is_symmetric(at):
    at.slider(key="rope_alibi_heads").set_value(6)
    at.radio(key="rope_alibi_kind").set_value("encoder (both sides)").run()
    assert not at.exception and not at.error
    traces, _ = heatmaps(at)
    assert len(traces) == 6
    z = np.asarray(plotly_array(traces[5]["z"]), dtype=float)
    m5 = alibi_slopes(6)[5].item()  # not a power of two: 2^(-8/4)^1 ... then every other slope of 8 heads
    assert math.isclose(m5, 2 ** -3, rel_tol=1e-12)
    assert math.isclose(z[2, 9], -m5 * 7, rel_tol=1e-12) and z[2, 9] == z[9, 2]  # |i - j|: both sides alike
    facts = [s.value for s in at.success]
    assert any("not a power of two" in f for f in facts) and all(f.startswith("✓") for f in facts)


def test_train_page_offers_alibi_and_its_position_comparison_runs_five():
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    app.run()
    app.switch_page("app_pages/train.py").run()
    assert "alibi" in app.selectbox(key="train_pos").options
    open_tab(app, "train_tab", "Compare setups")
    assert not app.exception and not app.error
    assert app.radio(key="train_ablation_kind").value == "position"
    assert app.button(key="train_ablation_start").label == "Run 5 side by side"  # none … rope, alibi
