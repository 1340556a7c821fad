"""Exports and presenter styling work on every kind of figure the pages build (fast-built ones included)."""

import plotly.graph_objects as go
import torch

from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.export import figure_csv, figure_html, figure_tables, presenter_style


def heatmap():
    probs = torch.softmax(torch.randn(4, 4), -1) * torch.ones(4, 4).tril()
    return attention_heatmap(probs, ["<bos>", "the", "cat", "the"], allowed=torch.ones(4, 4).tril().bool(),
                             title="L0 H0")


def test_csv_holds_the_matrix_with_token_labels():
    tables = figure_tables(heatmap())
    att = tables["attention"]
    assert att.shape == (4, 4)
    assert list(att.index) == ["0 &lt;bos&gt;", "1 the", "2 cat", "3 the"]
    assert att.isna().values.sum() == 6  # the 6 masked cells are holes, not zeros
    assert "# attention" in figure_csv(heatmap())


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
