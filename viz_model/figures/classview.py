"""A chart whose numbers answer an open class question, drawn with its frame only (#39, item 4): the same axes,
token labels and title, every cell one grey, no hover, no colour bar, no printed values."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import MASKED_COLOR, fast_figure

_DROPPED = ("annotations", "shapes", "images", "sliders", "updatemenus")  # subplot titles may name a head's role


def hidden_values(fig: go.Figure, note: str, labels: bool = True) -> go.Figure:
    """`fig` with its values gone: each heatmap becomes one grey of its own shape, every other trace goes, and `note`
    follows the title. A heatmap's token labels stay on its axes (the sentence the question is about) unless
    `labels` is False (labels that are themselves the answer, such as generated tokens); a chart with any other
    trace (a bar chart's labels rank the answer) keeps no tick labels."""
    labels = labels and all(t.type == "heatmap" for t in fig.data)
    data = [dict(type="heatmap", z=np.zeros(np.shape(t.z), dtype=np.uint8), xaxis=t.xaxis, yaxis=t.yaxis,
                 **({"x": t.x, "y": t.y} if labels else {}), name="hidden", showscale=False, hoverinfo="skip",
                 colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]])
            for t in fig.data if t.type == "heatmap" and t.z is not None]
    layout = {k: v for k, v in fig.layout.to_plotly_json().items() if k not in _DROPPED}
    for name in [k for k in layout if k.startswith("coloraxis")]:
        layout[name] = {**layout[name], "showscale": False}
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))] if not labels else ():
        axis = {k: v for k, v in layout[name].items() if k not in ("tickvals", "ticktext", "categoryarray")}
        layout[name] = {**axis, "showticklabels": False}
    title = (layout.get("title") or {}).get("text")
    layout["title"] = {**(layout.get("title") or {}), "text": f"{title} · {note}" if title else note}
    return fast_figure(data, layout)
