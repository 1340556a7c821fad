"""Encoder figures: the fill-ins of every <mask>, attention with the masks' rows and columns outlined, one query's
look-ahead bars (encoder vs causal decoder)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.attention import attention_grid_dicts, attention_heatmap
from viz_model.figures.common import (
    MASKED_COLOR,
    domain,
    escape,
    fast_figure,
    layout_dict,
    to_numpy,
    token_labels,
    visible,
)

FILL, ANSWER, HIGHLIGHT = "#4C78A8", "#F58518", "#E45756"  # bars, the hidden word, the mask rows/columns
MAX_COLUMNS = 3  # fill-in panels per row


def _panel_grid(n: int, cols: int, hspace: float = 0.12, vspace: float = 0.2) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of n panels in rows of `cols`, first row on top."""
    cols = max(1, min(n, cols))
    rows = -(-n // cols)
    w, h = (1 - hspace * (cols - 1)) / cols, (1 - vspace * (rows - 1)) / rows
    out = []
    for i in range(n):
        r, c = divmod(i, cols)
        x0, y1 = c * (w + hspace), 1 - r * (h + vspace)
        out.append((domain(x0, x0 + w), domain(y1 - h, y1)))
    return out


def fill_in_bars(
    fills: Sequence[Sequence[tuple[str, float]]],  # per <mask>: top-k (token, probability), most probable first
    positions: Sequence[int],                      # token index of each <mask> (with <bos> at 0)
    answers: Sequence[str | None] | None = None,   # the hidden word of each mask (None: typed as <mask>)
    *,
    title: str | None = None,
) -> go.Figure:
    """One panel of horizontal bars per <mask>; the hidden word's bar (when it made the top k) in orange."""
    if len(fills) != len(positions):
        raise ValueError(f"{len(fills)} lists of fill-ins for {len(positions)} masks.")
    answers = list(answers) if answers is not None else [None] * len(fills)
    grid = _panel_grid(len(fills), MAX_COLUMNS)
    data, layout, notes = [], {}, []
    for i, (top, pos, ans, (xd, yd)) in enumerate(zip(fills, positions, answers, grid)):
        n = "" if i == 0 else i + 1
        words = [escape(visible(t)) for t, _ in top]
        p = [float(v) for _, v in top]
        colours = [ANSWER if ans is not None and t == ans else FILL for t, _ in top]
        head = f"mask {i + 1} (token {pos})" + (f" — hidden: {escape(visible(ans))}" if ans is not None else "")
        data.append(dict(type="bar", orientation="h", x=p, y=list(range(len(words))), name=f"mask {i + 1}",
                         marker=dict(color=colours), text=[f"{v:.3f}" for v in p], textposition="outside",
                         cliponaxis=False, hovertext=[f"{head}<br>'{w}': p = {v:.4f}" for w, v in zip(words, p)],
                         hoverinfo="text", xaxis=f"x{n}", yaxis=f"y{n}"))
        layout[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=xd, range=[0, 1.18], title=dict(text="probability"))
        layout[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=yd, tickmode="array", tickvals=list(range(len(words))),
                                   ticktext=words, autorange="reversed")
        notes.append(dict(text=head, x=(xd[0] + xd[1]) / 2, y=yd[1], xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=13)))
    rows = -(-len(fills) // MAX_COLUMNS) if fills else 1
    k = max((len(f) for f in fills), default=1)
    return fast_figure(data, layout_dict(title, height=(90 if title else 50) + rows * (60 + 24 * k),
                                         showlegend=False, bargap=0.25, annotations=notes, **layout))


def _outline(positions: Sequence[int], T: int, n: int | str = "") -> list[dict]:
    """Rectangles around each mask's row (what it reads) and column (who reads it) on axes x{n}/y{n}.

    Category axes place token i at i, so a cell spans i ± 0.5."""
    line = dict(color=HIGHLIGHT, width=2)
    shapes = []
    for p in positions:
        shapes.append(dict(type="rect", xref=f"x{n}", yref=f"y{n}", x0=-0.5, x1=T - 0.5, y0=p - 0.5, y1=p + 0.5,
                           line=line, fillcolor="rgba(0,0,0,0)", layer="above"))
        shapes.append(dict(type="rect", xref=f"x{n}", yref=f"y{n}", x0=p - 0.5, x1=p + 0.5, y0=-0.5, y1=T - 0.5,
                           line=dict(line, dash="dot"), fillcolor="rgba(0,0,0,0)", layer="above"))
    return shapes


def masked_attention_grid(
    probs,                       # (L, H, T, T) bidirectional attention of every layer and head
    tokens: Sequence[str],
    positions: Sequence[int],    # token index of each <mask>
    *,
    title: str | None = None,
) -> go.Figure:
    """attention_grid with each mask's row (solid) and column (dotted) outlined in every head."""
    a = to_numpy(probs)
    L, H, T, _ = a.shape
    data, layout = attention_grid_dicts(a, tokens, title=title)
    shapes = [s for i in range(L * H) for s in _outline(positions, T, "" if i == 0 else i + 1)]
    return fast_figure(data, {**layout, "shapes": shapes})


def masked_attention_heatmap(
    probs,                       # (T, T) one head
    tokens: Sequence[str],
    positions: Sequence[int],
    *,
    title: str | None = None,
) -> go.Figure:
    """attention_heatmap of one head with each mask's row (solid) and column (dotted) outlined."""
    p = to_numpy(probs)
    fig = attention_heatmap(p, tokens, title=title).to_dict()
    return fast_figure(fig["data"], {**fig["layout"], "shapes": _outline(positions, p.shape[0])})


def look_ahead_bars(
    row,                          # (T,) attention of one query over every key
    tokens: Sequence[str],
    query: int,                   # token index of the query ("bank")
    key: int,                     # token index of the key to watch ("river")
    *,
    allowed=None,                 # (T,) bool: False = blocked by the mask (a grey column; the weight is exactly 0)
    ymax: float | None = None,    # top of the y axis (the same for charts side by side); default: from the data
    title: str | None = None,
) -> go.Figure:
    """What one query attends to: a bar per key, the watched key in orange; blocked keys as grey columns."""
    w = to_numpy(row).astype(float)
    T = len(w)
    if len(tokens) != T:
        raise ValueError(f"{T} weights for {len(tokens)} tokens.")
    ok = np.ones(T, dtype=bool) if allowed is None else to_numpy(allowed).astype(bool)
    labels = token_labels(tokens)
    q = labels[query]
    x = list(range(T))
    colours = [ANSWER if j == key else FILL for j in x]
    hover = [f"'{q}' → '{labels[j]}': {w[j]:.4f}" for j in x]
    data = [dict(type="bar", x=x, y=np.where(ok, w, 0.0), name="attention", marker=dict(color=colours),
                 text=[f"{v:.2f}" if k else "" for v, k in zip(w, ok)], textposition="outside", cliponaxis=False,
                 hovertext=hover, hoverinfo="text")]
    ymax = min(1.0, max(float(w.max(initial=0.0)), 0.05) * 1.25) + 0.02 if ymax is None else float(ymax)
    if not ok.all():  # a grey column over each blocked key: it cannot be read, which is not a learned 0
        blocked = [j for j in x if not ok[j]]
        data.insert(0, dict(type="bar", x=blocked, y=[ymax] * len(blocked), name="blocked",
                            marker=dict(color=MASKED_COLOR), text=["blocked: 0"] * len(blocked),
                            textposition="inside", insidetextanchor="middle", textangle=-90,
                            hovertext=[f"'{q}' → '{labels[j]}': blocked by the causal mask, exactly 0"
                                       for j in blocked], hoverinfo="text"))
    return fast_figure(data, layout_dict(
        title, height=320, showlegend=False, barmode="overlay", bargap=0.3,
        xaxis=dict(tickmode="array", tickvals=x, ticktext=labels, title=dict(text="key (attended to)")),
        yaxis=dict(range=[0, ymax], title=dict(text=f"attention of '{escape(visible(tokens[query]))}'"))))


__all__ = ["fill_in_bars", "look_ahead_bars", "masked_attention_grid", "masked_attention_heatmap"]
