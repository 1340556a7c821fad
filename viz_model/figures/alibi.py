"""Figures for the ALiBi tab: the bias −m_h·|i − j| of every head, one heatmap per head on one colour scale."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import MASKED_COLOR, SEQUENTIAL, domain, fast_figure, layout_dict, to_numpy

COLS = 4  # heads per row: four panels fit a laptop's width, and 16 heads make four rows


def bias_heads(bias, allowed, slopes: Sequence[float], title: str | None = None) -> go.Figure:
    """bias (H, T, T): query rows, key columns; allowed (T, T) bool (a decoder's later keys are grey: the bias there
    is never used); slopes (H,) for the panel titles and the hover. One colour scale from the most negative bias to 0,
    so heads compare: a steep head is dark a few keys away, a gentle one stays light."""
    b, ok = to_numpy(bias).astype(float), np.asarray(allowed, dtype=bool)
    H, T, _ = b.shape
    if ok.shape != (T, T) or len(slopes) != H:
        raise ValueError(f"the mask must be {T}x{T} and there must be one slope per head ({H}).")
    lo = float(np.where(ok, b, 0.0).min()) or -1.0
    rows = math.ceil(H / COLS)
    cols = min(H, COLS)
    panel, gap = (200 if T <= 24 else 260), 70  # px: one panel; the room under it for ticks and the next title
    plot = rows * panel + (rows - 1) * gap
    gap_x, gap_y = 0.06, gap / plot
    w = (1 - gap_x * (cols - 1)) / cols
    h = (1 - gap_y * (rows - 1)) / rows
    idx = list(range(T))
    data, axes, notes = [], {}, []
    for head in range(H):
        r, c = divmod(head, COLS)
        n = "" if head == 0 else head + 1
        xd, yd = domain(c * (w + gap_x), c * (w + gap_x) + w), domain(1 - r * (h + gap_y) - h, 1 - r * (h + gap_y))
        axes[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=xd, tickfont=dict(size=10),
                                 **({"title": dict(text="key position j")} if r == rows - 1 else {}))
        axes[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=yd, autorange="reversed", tickfont=dict(size=10),
                                 scaleanchor=f"x{n}", constrain="domain", constraintoward="top",  # square cells,
                                 # under their panel's title
                                 **({"title": dict(text="query position i")} if c == 0 else {}))
        m = float(slopes[head])
        notes.append(dict(text=f"head {head} · m = {m:.4g}", x=sum(xd) / 2, y=yd[1], xref="paper", yref="paper",
                          xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12)))
        hover = [[f"head {head}, query {i} → key {j}: distance {abs(i - j)}, bias " + (
            f"−{m:.4g}·{abs(i - j)} = {b[head, i, j]:.4g}" if ok[i, j] else "not used (blocked by the causal mask)")
            for j in idx] for i in idx]
        ax = dict(xaxis=f"x{n}", yaxis=f"y{n}")
        if not ok.all():
            data.append(dict(type="heatmap", z=np.where(ok, np.nan, 1.0), x=idx, y=idx, showscale=False,
                             name="blocked", colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], hovertext=hover,
                             hoverinfo="text", **ax))
        data.append(dict(type="heatmap", z=np.where(ok, b[head], np.nan), x=idx, y=idx, colorscale=SEQUENTIAL,
                         zmin=lo, zmax=0.0, name=f"head {head}", hovertext=hover, hoverinfo="text",
                         hoverongaps=False, showscale=head == 0,
                         colorbar=dict(thickness=12, title=dict(text="bias", side="right")), **ax))
    return fast_figure(data, layout_dict(title, height=plot + (120 if title else 80), top=80 if title else 40,
                                         title_top=bool(title), annotations=notes, **axes))
