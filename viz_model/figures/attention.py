"""Attention heatmaps: one head large, or a layers x heads grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_model.figures.common import MASKED_COLOR, SEQUENTIAL, base_layout, escape, to_numpy, token_labels


def _hover(value: str) -> str:
    # %{y} / %{x} are the escaped, numbered axis labels: the payload holds T labels, not T x T strings
    return "query '%{y}' → key '%{x}': " + value + "<extra></extra>"


def _category_axes(fig: go.Figure, q_labels: list[str], k_labels: list[str], **where) -> None:
    fig.update_xaxes(type="category", tickmode="array", tickvals=k_labels, ticktext=k_labels, **where)
    fig.update_yaxes(type="category", tickmode="array", tickvals=q_labels, ticktext=q_labels, autorange="reversed",
                     **where)


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
    """Query tokens on rows (top to bottom), key tokens on columns; hover "query '2 it' → key '0 book': 0.620".

    Axis labels are numbered ("0 the", "4 the") so duplicates stay distinct, and escaped so "<b>" shows as typed.
    """
    p = to_numpy(probs).astype(float)
    k_tokens = list(q_tokens) if k_tokens is None else list(k_tokens)
    Tq, Tk = p.shape
    if (Tq, Tk) != (len(q_tokens), len(k_tokens)):
        raise ValueError(f"matrix is {Tq}x{Tk} but there are {len(q_tokens)} query and {len(k_tokens)} key tokens.")
    ok = np.ones_like(p, dtype=bool) if allowed is None else to_numpy(allowed).astype(bool)
    ql, kl = token_labels(q_tokens), token_labels(k_tokens)
    show_values = max(Tq, Tk) <= 16 if show_values is None else show_values
    fig = go.Figure()
    if not ok.all():  # a grey layer beneath, so "blocked" never looks like "learned 0"
        fig.add_trace(go.Heatmap(
            z=np.where(ok, np.nan, 1.0).astype(np.float32), x=kl, y=ql, name="masked", showscale=False,
            hoverongaps=False,
            colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], hovertemplate=_hover("masked (−∞)"),
            text=np.where(ok, "", "×") if show_values else None, texttemplate="%{text}" if show_values else None,
        ))
    fig.add_trace(go.Heatmap(
        z=np.where(ok, p, np.nan).astype(np.float32),  # masked cells are holes
        x=kl, y=ql, name=value_name, hoverongaps=False,
        colorscale=colorscale, zmin=0 if zmax is not None else None, zmax=zmax,
        text=np.where(ok, np.round(p, 2).astype(str), "") if show_values else None,
        texttemplate="%{text}" if show_values else None, hovertemplate=_hover("%{z:.3f}"),
        colorbar=dict(title=dict(text=escape(value_name), side="right"), thickness=12),
    ))
    _category_axes(fig, ql, kl)
    fig.update_xaxes(title="key (attended to)", side="top", tickangle=-45)
    fig.update_yaxes(title="query (attending)")
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
    names = [f"L{l}·H{h}" + (f"<br><sub>{escape(roles[l][h])}</sub>" if roles and roles[l][h] else "")
             for l in range(L) for h in range(H)]
    fig = make_subplots(rows=L, cols=H, subplot_titles=names, horizontal_spacing=0.02,
                        vertical_spacing=(0.12 if roles else 0.08) if L > 1 else 0.0)
    labels = token_labels(tokens)
    grey = np.where(ok, np.nan, 1.0).astype(np.float32)  # float32 halves the payload
    for l in range(L):
        for h in range(H):
            where = dict(row=l + 1, col=h + 1)
            if not ok.all():  # grey underlay: a blocked cell never reads as "learned 0"
                fig.add_trace(go.Heatmap(z=grey, x=labels, y=labels, colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                                         showscale=False, hoverongaps=False, name=f"L{l}H{h} masked",
                                         hovertemplate=f"L{l} H{h}: " + _hover("masked (−∞)")), **where)
            z = np.where(ok, a[l, h], np.nan).astype(np.float32)
            fig.add_trace(go.Heatmap(z=z, x=labels, y=labels, zmin=0, zmax=1,
                                     colorscale=SEQUENTIAL, showscale=(l == h == 0), name=f"L{l}H{h}",
                                     hoverongaps=False, hovertemplate=f"L{l} H{h}: " + _hover("%{z:.3f}"),
                                     colorbar=dict(thickness=10, title=dict(text="attention"))), **where)
    fig.update_xaxes(type="category", showticklabels=False)
    fig.update_yaxes(type="category", showticklabels=False, autorange="reversed")
    fig = base_layout(fig, title, height=(100 if title else 60) + (170 if roles else 150) * L)
    if title:  # keep the figure title clear of the first row's subplot titles
        fig.update_layout(margin=dict(t=100), title=dict(y=0.99, yanchor="top"))
    return fig
