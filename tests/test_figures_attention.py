"""Figure factories of the Attention pages: trace types, shapes, axis labels (duplicates, <pad>), hover text."""

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from viz_model import masks
from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.common import MASKED_COLOR
from viz_model.figures.explorer import entropy_bars, matrix_heatmap, query_bars, value_mix
from viz_model.figures.masks import dependency_figure, mask_panels, row_sum_bars

TOKENS = ["the", "cat", "<pad>", "the", "<b>x</b>"]  # a duplicate, a special token, HTML-looking text
T = len(TOKENS)


def causal_probs(T: int, seed: int = 0) -> np.ndarray:
    torch.manual_seed(seed)
    return torch.softmax(torch.randn(T, T).masked_fill(~masks.causal_mask(T), float("-inf")), -1).numpy()


def trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_heatmap_keeps_duplicates_distinct_and_specials_literal():
    fig = attention_heatmap(causal_probs(T), TOKENS, allowed=masks.causal_mask(T))
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks == ["0 the", "1 cat", "2 &lt;pad&gt;", "3 the", "4 &lt;b&gt;x&lt;/b&gt;"]
    assert list(fig.layout.xaxis.ticktext) == ticks
    assert fig.layout.yaxis.title.text.startswith("query") and fig.layout.xaxis.title.text.startswith("key")


def test_heatmap_hover_names_query_and_key_and_masked_cells_differ_from_zero():
    p = causal_probs(T)
    fig = attention_heatmap(p, TOKENS, allowed=masks.causal_mask(T))
    att, grey = trace(fig, "attention"), trace(fig, "masked")
    # the hover label is built from the (escaped, numbered) axis labels: "query '1 cat' → key '0 the': 0.620"
    assert att.hovertemplate == "query '%{y}' → key '%{x}': %{z:.3f}<extra></extra>"
    assert list(att.y) == list(att.x) == list(fig.layout.yaxis.ticktext) and fig.layout.yaxis.type == "category"
    assert "masked (−∞)" in grey.hovertemplate
    assert math.isnan(att.z[0][1]) and att.z[1][0] == pytest.approx(p[1, 0])  # a hole, not a 0 ...
    assert grey.z[0][1] == 1 and grey.z[1][0] == 0                            # ... drawn grey beneath
    assert all(c[1] == MASKED_COLOR for c in grey.colorscale)                 # (grey at 0 and 1: the hole shows it)
    assert fig.data[0].name == "masked"                                       # underlay first
    assert att.text[1][0] == str(round(p[1, 0], 2)) and att.text[0][1] == ""  # values printed when T <= 16
    assert grey.text[0][1] == "×"
    go.Figure(fig.to_dict())  # built without validation for speed: it must still be a valid figure


def test_heatmap_prints_values_only_up_to_16_tokens():
    assert attention_heatmap(causal_probs(17), [f"t{i}" for i in range(17)]).data[0].text is None


def test_grid_has_one_panel_per_head_and_greys_masked_cells():
    probs = np.stack([np.stack([causal_probs(T, s) for s in range(3)]) for _ in range(2)])  # (L=2, H=3, T, T)
    fig = attention_grid(probs, TOKENS, roles=[["prev 0.9", "", "sink"], ["", "", ""]], allowed=masks.causal_mask(T))
    heads = [t for t in fig.data if not t.name.endswith("masked")]
    assert [t.name for t in heads] == [f"L{l}H{h}" for l in range(2) for h in range(3)]
    assert len(fig.data) == 12 and all(t.type == "heatmap" for t in fig.data)
    assert heads[0].hovertemplate.startswith("L0 H0: query '%{y}' → key '%{x}'")
    assert list(heads[0].x)[2] == "2 &lt;pad&gt;"
    assert all("masked (−∞)" in t.hovertemplate for t in fig.data if t.name.endswith("masked"))
    grey, first = trace(fig, "L0H0 masked"), trace(fig, "L0H0")  # grey beneath (1 = blocked), holes on top
    assert grey.z[0][1] == 1 and grey.z[1][0] == 0 and math.isnan(first.z[0][1]) and not math.isnan(first.z[1][0])
    assert fig.data.index(grey) < fig.data.index(first)
    # the role's name and score on two lines (one line ran into the next head's title on a phone)
    assert fig.layout.annotations[0].text == "L0·H0<br><sub>prev</sub><br><sub>0.9</sub>"
    assert fig.layout.annotations[2].text == "L0·H2<br><sub>sink</sub>" and fig.layout.annotations[1].text == "L0·H1"
    assert all(t.zmin == 0 and t.zmax == 1 for t in heads)  # one shared colour scale
    go.Figure(fig.to_dict())  # built without validation for speed: it must still be a valid figure


def test_grid_places_heads_on_separate_axes_row_by_row():
    fig = attention_grid(np.stack([np.stack([causal_probs(T, s) for s in range(2)])] * 2), TOKENS)
    assert [(t.xaxis, t.yaxis) for t in fig.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3"), ("x4", "y4")]
    assert fig.layout.xaxis2.domain[0] > fig.layout.xaxis.domain[1]      # head 1 right of head 0
    assert fig.layout.yaxis3.domain[1] < fig.layout.yaxis.domain[0]      # layer 1 below layer 0
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.xaxis.type == "category"


def test_matrix_heatmap_shows_minus_infinity_as_text_and_a_grey_cell():
    s = np.arange(T * T, dtype=float).reshape(T, T) - 10
    s[~masks.causal_mask(T).numpy()] = -np.inf
    fig = matrix_heatmap(s, TOKENS, TOKENS, col_tokens=True, value_name="S + M", col_title="key")
    main, grey = trace(fig, "S + M"), trace(fig, "masked")
    assert grey.text[0][1] == "−∞" and grey.z[0][1] == 1 and grey.z[1][0] == 0 and fig.data[0] is grey
    assert math.isnan(main.z[0][1]) and main.z[1][0] == s[1, 0] and main.text[1][0] == f"{s[1, 0]:.2f}"
    assert main.hovertemplate == "query token %{y} · key %{x}: %{z:.3g}<extra></extra>"
    assert grey.hovertemplate == "query token %{y} · key %{x}: −∞<extra></extra>"
    assert list(main.y) == ["0 the", "1 cat", "2 &lt;pad&gt;", "3 the", "4 &lt;b&gt;x&lt;/b&gt;"]
    go.Figure(fig.to_dict())  # valid, although built without validation
    assert main.zmin == -main.zmax  # diverging scale centred at 0
    assert list(fig.layout.xaxis.ticktext)[2] == "2 &lt;pad&gt;"


def test_matrix_heatmap_feature_columns_and_shape_check():
    q = np.random.default_rng(0).normal(size=(T, 4))
    fig = matrix_heatmap(q, TOKENS, value_name="Q", col_title="d_k")
    assert np.asarray(fig.data[0].z).shape == (T, 4) and list(fig.layout.xaxis.ticktext) == ["0", "1", "2", "3"]
    with pytest.raises(ValueError, match="rows"):
        matrix_heatmap(q, TOKENS[:3])


def test_query_bars_and_value_mix_for_one_query():
    p = causal_probs(T)
    v = np.random.default_rng(1).normal(size=(T, 4))
    bars = query_bars(p[2], TOKENS, TOKENS[2], allowed=masks.causal_mask(T)[2])
    assert bars.data[0].type == "bar" and bars.data[0].hovertext[0] == f"query '&lt;pad&gt;' → key 0 the: {p[2, 0]:.3f}"
    assert bars.data[0].text[3] == "masked"
    mix = value_mix(p[2], v, TOKENS, TOKENS[2])
    z = np.asarray(mix.data[0].z)
    assert z.shape == (T + 1, 4) and np.allclose(z[-1], p[2] @ v)  # the last row is the head output
    assert list(mix.layout.yaxis.ticktext)[-1] == "= output" and list(mix.data[0].y)[0].endswith("v[0 the]")
    assert mix.data[0].hovertemplate == "%{y} · feature %{x}: %{z:.3f}<extra></extra>"
    go.Figure(bars.to_dict()), go.Figure(mix.to_dict())  # valid, although built without validation


def test_entropy_and_row_sum_bars_plot_the_given_values():
    e = np.array([0.0, 0.5, 1.0, 1.2, 1.5])
    fig = entropy_bars(e, TOKENS, max_entropy=np.log(np.arange(1, T + 1)))
    assert list(fig.data[0].y) == list(e) and fig.data[1].name.startswith("uniform")
    go.Figure(fig.to_dict())
    sums = row_sum_bars(np.ones(T), np.linspace(0.2, 1, T), TOKENS)
    assert [t.type for t in sums.data] == ["bar", "bar"] and sums.data[1].y[0] == pytest.approx(0.2)


def test_mask_panels_show_bool_additive_scores_and_probs_side_by_side():
    allowed = masks.sliding_window_mask(T, 2).numpy()
    scores = np.random.default_rng(2).normal(size=(T, T))
    probs = causal_probs(T)
    fig = mask_panels(allowed, scores, probs, TOKENS)
    names = [t.name for t in fig.data]
    assert [n for n in names if "masked" not in n] == ["mask", "additive", "scores", "probs"]
    assert trace(fig, "mask").text[3][2] == "✓" and trace(fig, "mask").text[3][1] == "✗"  # window 2: keys 2, 3
    assert trace(fig, "additive").text[3][0] == "−∞" and trace(fig, "additive").text[3][3] == "0"
    assert "query 3 the → key 0 the: −∞" in trace(fig, "scores").hovertext[3][0]
    assert math.isnan(trace(fig, "probs").z[3][0])
    assert len(fig.layout.annotations) == 4  # panel titles


def test_dependency_figure_greys_exact_zeros_and_normalises_rows():
    j = np.tril(np.random.default_rng(3).uniform(0.5, 2, size=(T, T)))
    fig = dependency_figure(j, TOKENS)
    dep = trace(fig, "dependence")
    assert trace(fig, "exactly zero").z[0][1] == 1.0 and math.isnan(dep.z[0][1])
    assert np.nansum(np.asarray(dep.z, dtype=float), axis=1) == pytest.approx(np.ones(T))
    assert "exactly 0" in dep.hovertext[0][1] and dep.hovertext[1][0].startswith("output 1 cat ← input 0 the")


def test_fast_built_figures_keep_the_app_template_for_their_own_trace_types():
    import plotly.io as pio

    from viz_model.figures.common import TEMPLATE

    fig = attention_heatmap(causal_probs(T), TOKENS, allowed=masks.causal_mask(T)).to_dict()
    full = pio.templates[TEMPLATE].to_plotly_json()
    assert fig["layout"]["template"]["layout"] == full["layout"]  # the theme's layout, whole
    assert fig["layout"]["template"].get("data", {}) == {k: v for k, v in full["data"].items() if k == "heatmap"}


def test_the_train_pages_live_probe_heatmaps_carry_their_tokens():
    """#43 (11): the Train page's "Probe attention now" heatmaps had no token labels (every axis hid its ticks): the
    keys are now named under the bottom row and the queries left of the first column, and only there."""
    from viz_model.figures.common import token_labels
    from viz_model.figures.train import attention_now

    L, H, T = 2, 3, 5
    tokens = ["<bos>", "the", "cat", "the", "mat"]  # a repeated token stays its own label
    probs = np.full((L, H, T, T), 1 / T)
    fig = attention_now(probs, tokens, title="Probe attention now").to_dict()["layout"]
    labels = token_labels(tokens)
    assert len(set(labels)) == T
    for la in range(L):
        for h in range(H):
            n = la * H + h + 1
            x, y = fig[f"xaxis{n if n > 1 else ''}"], fig[f"yaxis{n if n > 1 else ''}"]
            assert x["showticklabels"] == (la == L - 1) and y["showticklabels"] == (h == 0)
            if la == L - 1:
                assert list(x["ticktext"]) == labels and list(x["tickvals"]) == list(range(T))
            if h == 0:
                assert list(y["ticktext"]) == labels
