"""Exports and presenter styling work on every kind of figure the pages build (fast-built ones included)."""

import numpy as np
import plotly.graph_objects as go
import torch

from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.explorer import matrix_heatmap
from viz_model.figures.export import PRESENTER_TICKS, figure_csv, figure_html, figure_tables, presenter_style
from viz_model.figures.masks import mask_panels


def heatmap():
    probs = torch.softmax(torch.randn(4, 4), -1) * torch.ones(4, 4).tril()
    return attention_heatmap(probs, ["<bos>", "the", "cat", "the"], allowed=torch.ones(4, 4).tril().bool(),
                             title="L0 H0")


def test_csv_holds_the_matrix_with_token_labels_as_typed_and_masked_weights_as_zero():
    """The CSV used to say "0 &lt;bos&gt;" (the label escaped for Plotly) and left masked cells blank."""
    tables = figure_tables(heatmap())
    att = tables["attention"]
    assert att.shape == (4, 4)
    assert list(att.index) == ["0 <bos>", "1 the", "2 cat", "3 the"] == list(att.columns)
    assert not att.isna().values.any()
    assert (att.values[np.triu_indices(4, 1)] == 0).all()  # the 6 masked cells: weight exactly 0
    csv = figure_csv(heatmap())
    assert "# attention" in csv and "0 <bos>" in csv and "&lt;" not in csv and ",," not in csv


def test_csv_writes_masked_scores_as_minus_infinity_and_html_looking_tokens_literally():
    tokens = ["<bos>", "a&b", "<b>x</b>"]
    ok = np.tril(np.ones((3, 3), dtype=bool))
    s = np.where(ok, np.arange(9.0).reshape(3, 3), -np.inf)
    table = figure_tables(matrix_heatmap(s, tokens, tokens, col_tokens=True, allowed=ok, value_name="S + M"))["S + M"]
    assert list(table.index) == ["0 <bos>", "1 a&b", "2 <b>x</b>"]
    assert table.values[0, 1] == -np.inf and table.values[2, 1] == 7.0


def test_csv_of_the_mask_panels_fills_each_panel_as_its_meaning():
    ok = np.tril(np.ones((3, 3), dtype=bool))
    s = np.arange(9.0).reshape(3, 3)
    p = np.where(ok, 1.0, 0.0) / ok.sum(1, keepdims=True)
    tables = figure_tables(mask_panels(ok, s, p, ["<bos>", "the", "cat"]))
    assert tables["probs"].values[0, 2] == 0.0 and tables["scores"].values[0, 2] == -np.inf
    assert list(tables["probs"].index) == ["0 <bos>", "1 the", "2 cat"]


def test_line_charts_export_x_and_y():
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[3.0, 2.0, 1.0], name="loss"))
    assert figure_tables(fig)["loss"]["y"].tolist() == [3.0, 2.0, 1.0]


def test_html_is_standalone_and_offline():
    html = figure_html(heatmap(), "L0 H0")
    assert html.startswith("<html>") or "<html" in html[:200]
    assert 'src="http' not in html and "<title>L0 H0</title>" in html


def test_presenter_style_enlarges_type_and_uses_colour_blind_safe_scales():
    fig = presenter_style(go.Figure(heatmap()))
    assert fig.layout.font.size == 18
    scales = [t.colorscale for t in fig.data if t.name == "attention"]
    assert scales and scales[0][0][1].lower() == "#00224e"  # Cividis starts at #00224e
    grid = presenter_style(go.Figure(attention_grid(torch.rand(2, 2, 3, 3), ["a", "b", "c"])))
    assert grid.layout.font.size == 18


def test_presenter_style_enlarges_the_token_labels_of_every_axis():
    """The heatmaps' token labels stayed small on a projector: the layout font does not reach per-axis tick fonts."""
    fig = presenter_style(go.Figure(heatmap()))
    assert fig.layout.xaxis.tickfont.size == fig.layout.yaxis.tickfont.size == PRESENTER_TICKS >= 16
    ok = np.tril(np.ones((3, 3), dtype=bool))
    panels = presenter_style(go.Figure(mask_panels(ok, np.zeros((3, 3)), ok / ok.sum(1, keepdims=True), list("abc"))))
    axes = [k for k in panels.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 8 and all(panels.layout[k].tickfont.size == PRESENTER_TICKS for k in axes)  # were 10 px
    scale = next(t for t in fig.data if t.name == "attention")
    assert scale.colorbar.tickfont.size == PRESENTER_TICKS
