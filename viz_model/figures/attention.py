"""Attention heatmaps: one head large, or a layers x heads grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_model.figures.common import MASKED_COLOR, SEQUENTIAL, base_layout, escape, to_numpy, token_labels, visible


def attention_heatmap(
    probs,                                 # (Tq, Tk) attention weights of one head
    q_tokens: Sequence[str],
    k_tokens: Sequence[str] | None = None,
    *,
    allowed=None,                          # (Tq, Tk) bool: False cells were masked (drawn grey, not 0)
    title: str | None = None,
    show_values: bool | None = None,       # default: print values when T <= 16
    zmax: float | None = 1.0,
    colorscale: str = SEQUENTIAL,
    value_name: str = "attention",
) -> go.Figure:
    """Query tokens on rows (top to bottom), key tokens on columns; hover 'query 'it' → key 'book': 0.62'."""
    p = to_numpy(probs).astype(float)
    k_tokens = list(q_tokens) if k_tokens is None else list(k_tokens)
    Tq, Tk = p.shape
    if (Tq, Tk) != (len(q_tokens), len(k_tokens)):
        raise ValueError(f"matrix is {Tq}x{Tk} but there are {len(q_tokens)} query and {len(k_tokens)} key tokens.")
    ok = np.ones_like(p, dtype=bool) if allowed is None else to_numpy(allowed).astype(bool)
    z = np.where(ok, p, np.nan)  # masked cells are holes in the heatmap ...
    qn, kn = [escape(visible(t)) for t in q_tokens], [escape(visible(t)) for t in k_tokens]
    hover = [[f"query {i} '{qn[i]}' → key {j} '{kn[j]}': " + (f"{p[i, j]:.3f}" if ok[i, j] else "masked (−∞)")
              for j in range(Tk)] for i in range(Tq)]
    show_values = max(Tq, Tk) <= 16 if show_values is None else show_values
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(Tk)), y=list(range(Tq)),
        colorscale=colorscale, zmin=0 if zmax is not None else None, zmax=zmax,
        text=np.where(ok, np.round(p, 2).astype(str), "×") if show_values else None,
        texttemplate="%{text}" if show_values else None,
        hovertext=hover, hoverinfo="text", hoverongaps=True,
        colorbar=dict(title=dict(text=value_name, side="right"), thickness=12),
        name=value_name,
    ))
    if not ok.all():  # ... drawn on a grey layer beneath, so "blocked" never looks like "learned 0"
        fig.add_trace(go.Heatmap(
            z=np.where(ok, np.nan, 1.0), x=list(range(Tk)), y=list(range(Tq)),
            colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], showscale=False,
            hovertext=hover, hoverinfo="text", name="masked",
            text=np.where(ok, "", "×") if show_values else None, texttemplate="%{text}" if show_values else None,
        ))
        fig.data = fig.data[::-1]
    fig.update_xaxes(tickmode="array", tickvals=list(range(Tk)), ticktext=token_labels(k_tokens),
                     title="key (attended to)", side="top", tickangle=-45)
    fig.update_yaxes(tickmode="array", tickvals=list(range(Tq)), ticktext=token_labels(q_tokens),
                     title="query (attending)", autorange="reversed")
    fig = base_layout(fig, title, height=max(340, 130 + 30 * Tq))
    fig.update_layout(margin=dict(t=120 if title else 90), title=dict(y=0.99, yanchor="top"))
    return fig


def attention_grid(
    probs,                      # (L, H, T, T) attention of every layer and head for one sentence
    tokens: Sequence[str],
    *,
    roles: list[list[str]] | None = None,  # optional subtitle per head, e.g. "prev-token 0.93"
    title: str | None = None,
    allowed=None,               # (T, T) bool: False cells were masked (grey, "masked" in hover), not a learned 0
) -> go.Figure:
    """All heads at a glance on one shared 0..1 colour scale; row = layer, column = head."""
    a = to_numpy(probs)
    L, H, T, _ = a.shape
    ok = np.ones((T, T), dtype=bool) if allowed is None else to_numpy(allowed).astype(bool)
    names = [f"L{l}·H{h}" + (f"<br><sub>{escape(roles[l][h])}</sub>" if roles else "")
             for l in range(L) for h in range(H)]
    fig = make_subplots(rows=L, cols=H, subplot_titles=names, horizontal_spacing=0.02,
                        vertical_spacing=0.08 if L > 1 else 0.0)
    labels = token_labels(tokens)
    for l in range(L):
        for h in range(H):
            hover = [[f"L{l} H{h}: query '{labels[i]}' → key '{labels[j]}': "
                      + (f"{a[l, h, i, j]:.3f}" if ok[i, j] else "masked (−∞)") for j in range(T)] for i in range(T)]
            if not ok.all():  # grey underlay: a blocked cell never reads as "learned 0"
                fig.add_trace(go.Heatmap(z=np.where(ok, np.nan, 1.0), colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                                         showscale=False, hovertext=hover, hoverinfo="text", name=f"L{l}H{h} masked"),
                              row=l + 1, col=h + 1)
            fig.add_trace(go.Heatmap(z=np.where(ok, a[l, h], np.nan), zmin=0, zmax=1, colorscale=SEQUENTIAL,
                                     showscale=(l == h == 0), hovertext=hover, hoverinfo="text", name=f"L{l}H{h}",
                                     hoverongaps=False, colorbar=dict(thickness=10, title=dict(text="attention"))),
                          row=l + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    return base_layout(fig, title, height=60 + 150 * L)
