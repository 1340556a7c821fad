"""Next-token figures shared by the lessons that pick a next token (Generate, Encoder–decoder): the model's
distribution beside what a sampling strategy keeps of it. Pure functions: arrays in, go.Figure out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import escape, fast_figure, layout_dict, panel_row, visible

KEPT, REMOVED, CHOSEN = "#4C78A8", "rgba(160,160,160,0.55)", "#F58518"


def next_token_bars(
    labels: Sequence[str],   # (N,) token text of each candidate, most probable first
    p: Sequence[float],      # (N,) model probability p(token | prefix)
    q: Sequence[float],      # (N,) probability after temperature/top-k/top-p, renormalised (0 = removed)
    chosen: int,             # index into labels of the token that was picked
    *,
    strategy: str = "",
    title: str | None = None,
) -> go.Figure:
    """Two panels, same rows: the model's distribution, then what was actually sampled from."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    names = [escape(visible(t)) for t in labels]
    kept = q > 0
    colours = [CHOSEN if i == chosen else (KEPT if kept[i] else REMOVED) for i in range(len(names))]
    status = ["chosen" if i == chosen else ("kept" if kept[i] else "removed by the filter") for i in range(len(names))]
    hover = [f"'{n}'<br>model p = {a:.4f}<br>after filter = {b:.4f}<br>{s}" for n, a, b, s in zip(names, p, q, status)]
    y = list(range(len(names)))
    panels = ("1. model: p(next | prefix)", f"2. after {escape(strategy) or 'filtering'} (renormalised)")
    domains, notes = panel_row(panels, 0.04)  # one row of two panels sharing the y axis, a title above each
    bars = [dict(type="bar", x=p, y=y, orientation="h", marker=dict(color=colours), name="model p",
                 text=[f"{v:.3f}" for v in p], textposition="outside", cliponaxis=False, hovertext=hover,
                 hoverinfo="text", xaxis="x", yaxis="y"),
            dict(type="bar", x=q, y=y, orientation="h", marker=dict(color=[c if k else REMOVED for c, k in
                                                                            zip(colours, kept)]),
                 name="after filter", text=[f"{v:.3f}" if k else "removed" for v, k in zip(q, kept)],
                 textposition="outside", cliponaxis=False, hovertext=hover, hoverinfo="text", xaxis="x2", yaxis="y2")]
    top = max(float(p.max(initial=0)), float(q.max(initial=0)), 1e-9)
    def x_axis(c: int) -> dict:  # one dict per axis: a figure's axes share no mutable parts
        return dict(anchor=f"y{c or ''}", domain=domains[c - 1 if c else 0], range=[0, min(1.0, top) * 1.3],
                    title=dict(text="probability"))

    return fast_figure(bars, layout_dict(
        title, height=140 + 26 * len(names), showlegend=False, bargap=0.25, annotations=notes,
        xaxis=x_axis(0), xaxis2=x_axis(2),
        yaxis=dict(anchor="x", domain=[0.0, 1.0], tickmode="array", tickvals=y, autorange="reversed",
                   ticktext=[("▶ " if i == chosen else "") + n for i, n in enumerate(names)]),
        yaxis2=dict(anchor="x2", domain=[0.0, 1.0], matches="y", showticklabels=False)))
