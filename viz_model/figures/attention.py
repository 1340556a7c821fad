"""Attention heatmaps: one head large, or a layers x heads grid; and how one query mixes the value vectors."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import (
    DIVERGING,
    SEQUENTIAL,
    allowed_cells,
    category_axis,
    domain,
    escape,
    fast_figure,
    layout_dict,
    masked_trace,
    to_numpy,
    token_labels,
    visible,
)


def _hover(value: str) -> str:
    # %{y} / %{x} are the escaped, numbered axis labels: the payload holds T labels, not T x T strings
    return "query '%{y}' → key '%{x}': " + value + "<extra></extra>"


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
    ok = allowed_cells(allowed, p.shape)
    ql, kl = token_labels(q_tokens), token_labels(k_tokens)
    show_values = max(Tq, Tk) <= 16 if show_values is None else show_values
    traces = []
    if not ok.all():  # a grey layer beneath, so "blocked" never looks like "learned 0"
        traces.append(masked_trace(ok, kl, ql, mark="×" if show_values else None, hoverongaps=False,
                                   hovertemplate=_hover("masked (−∞)")))
    traces.append(dict(type="heatmap",
        z=np.where(ok, p, np.nan).astype(np.float32),  # masked cells are holes
        x=kl, y=ql, name=value_name, hoverongaps=False,
        colorscale=colorscale, zmin=0 if zmax is not None else None, zmax=zmax,
        text=np.where(ok, np.round(p, 2).astype(str), "") if show_values else None,
        texttemplate="%{text}" if show_values else None, hovertemplate=_hover("%{z:.3f}"),
        colorbar=dict(title=dict(text=escape(value_name), side="right"), thickness=12),
    ))
    return fast_figure(traces, layout_dict(
        title, height=max(340, 130 + 30 * Tq), top=120 if title else 90, title_top=bool(title),
        xaxis=category_axis(kl, "key (attended to)", side="top", tickangle=-45),
        yaxis=category_axis(ql, "query (attending)", autorange="reversed")))


def attention_grid(
    probs,                      # (L, H, T, T) attention of every layer and head for one sentence
    tokens: Sequence[str],
    *,
    roles: list[list[str]] | None = None,  # optional subtitle per head, e.g. "prev-token 0.93"
    title: str | None = None,
    allowed=None,               # (T, T) bool: False cells were masked (grey, "masked" in hover), not a learned 0
) -> go.Figure:
    """All heads at a glance on one shared 0..1 colour scale; row = layer, column = head.

    Built from plain dicts in one go.Figure call with Plotly's validation skipped (make_subplots + validated traces
    cost ~30x more on a busy 2-core server); tests check that the result passes validation.
    """
    return fast_figure(*attention_grid_dicts(probs, tokens, roles=roles, title=title, allowed=allowed))


def _sub_lines(sub: str) -> list[str]:
    """A head's subtitle as lines: a role's name above its score ("previous-token 0.53 · K/V 1" ->
    ["previous-token", "0.53 · K/V 1"]); on one line it ran into the next head's at 390 px (a phone)."""
    first, *rest = sub.split(" · ")
    name, _, score = first.rpartition(" ")
    if not name or not re.fullmatch(r"\d+\.\d+", score):
        return [sub]
    return [name, " · ".join([score, *rest])]


def attention_grid_dicts(probs, tokens: Sequence[str], *, roles: list[list[str]] | None = None,
                         title: str | None = None, allowed=None, q_tokens: Sequence[str] | None = None
                         ) -> tuple[list[dict], dict]:
    """attention_grid's traces and layout as plain dicts, for figures built on it (the training player).
    q_tokens labels the rows when queries and keys differ (cross-attention: (L, H, T_tgt, T_src))."""
    a = to_numpy(probs)
    L, H, Tq, Tk = a.shape
    ok = allowed_cells(allowed, (Tq, Tk))
    labels = token_labels(tokens)
    rows = labels if q_tokens is None else token_labels(q_tokens)
    hs, vs = 0.02, ((0.16 if roles else 0.08) if L > 1 else 0.0)
    w, h_ = (1 - hs * (H - 1)) / H, (1 - vs * (L - 1)) / L
    data, layout, notes = [], {}, []
    for l in range(L):
        for h in range(H):
            n = l * H + h + 1
            n = "" if n == 1 else n  # Plotly names the first axes x / y, then x2 / y2 ...
            ax = dict(xaxis=f"x{n}", yaxis=f"y{n}")
            x0, y1 = h * (w + hs), 1 - l * (h_ + vs)
            plain = dict(type="category", showticklabels=False, ticks="", showgrid=False, zeroline=False)
            layout[f"xaxis{n}"] = dict(domain=domain(x0, x0 + w), anchor=f"y{n}", **plain)
            layout[f"yaxis{n}"] = dict(domain=domain(y1 - h_, y1), anchor=f"x{n}", autorange="reversed", **plain)
            sub = "".join(f"<br><sub>{escape(line)}</sub>" for line in _sub_lines(roles[l][h])) \
                if roles and roles[l][h] else ""
            notes.append(dict(text=f"L{l}·H{h}{sub}", x=x0 + w / 2, y=y1, xref="paper", yref="paper",
                              xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=13)))
            if not ok.all():  # grey underlay: a blocked cell never reads as "learned 0"
                data.append(masked_trace(ok, labels, rows, f"L{l}H{h} masked", hoverongaps=False,
                                         hovertemplate=f"L{l} H{h}: " + _hover("masked (−∞)"), **ax))
            data.append(dict(type="heatmap", z=np.where(ok, a[l, h], np.nan).astype(np.float32), x=labels, y=rows,
                             zmin=0, zmax=1, colorscale=SEQUENTIAL, showscale=(l == h == 0), name=f"L{l}H{h}",
                             hoverongaps=False, hovertemplate=f"L{l} H{h}: " + _hover("%{z:.3f}"),
                             colorbar=dict(thickness=10, title=dict(text="attention")), **ax))
    # title: keep the figure title clear of the first row's subplot titles
    return data, layout_dict(title, height=(100 if title else 60) + (190 if roles else 150) * L,
                             top=(120 if roles else 100) if title else None, title_top=bool(title),
                             annotations=notes, **layout)


def value_mix(weights, v, k_tokens: Sequence[str], query_token: str) -> go.Figure:
    """Rows: a_j · v_j for each key j, then their sum (= this query's head output). Columns: d_k features."""
    w, vv = to_numpy(weights).astype(float), to_numpy(v).astype(float)  # (Tk,), (Tk, d_k)
    contrib = w[:, None] * vv                                             # (Tk, d_k)
    mix = np.vstack([contrib, contrib.sum(0, keepdims=True)])              # (Tk + 1, d_k)
    rows = [f"{w[j]:.2f} × v[{lab}]" for j, lab in enumerate(token_labels(k_tokens))] + ["= output"]
    bound = float(np.abs(mix).max()) or 1.0
    heat = dict(type="heatmap", z=mix.astype(np.float32), x=list(range(mix.shape[1])), y=rows, colorscale=DIVERGING,
                zmin=-bound, zmax=bound, name="weighted values",
                hovertemplate="%{y} · feature %{x}: %{z:.3f}<extra></extra>",
                colorbar=dict(thickness=12, title=dict(text="a·v")))
    title = f"Which value vectors '{escape(visible(query_token))}' mixes"
    return fast_figure([heat], layout_dict(title, height=max(300, 110 + 24 * len(rows)),
                                           yaxis=category_axis(rows, "weighted value vectors", autorange="reversed"),
                                           xaxis=dict(title=dict(text="feature of the value vector (d_k)"))))
