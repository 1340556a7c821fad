"""Figures of the Q, K and V page: one query's lookup, the variants' score matrices, self-attention, cosines, loss."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from viz_model.figures.common import (
    COLORWAY,
    DIVERGING,
    MASKED_COLOR,
    escape,
    fast_figure,
    layout_dict,
    panel_row,
    shows_text,
    to_numpy,
    token_labels,
    visible,
)

POSITIVE, NEGATIVE, WEIGHT = "#c0392b", "#2f6db5", "#3b6fb6"   # the ends of RdBu_r, and the app's bar blue
SERIES = tuple(COLORWAY[:5])  # colour-blind-safe series (Tableau's orange and green merge under protanopia)
CELL_TEXT_PX = 12           # the smallest cell number that reads on a projector (masks.shows_text measures its room)
CELL_TEXT_COLOR = "#111111"  # one dark colour for every cell number: the scale below keeps each cell light enough
# RdBu_r from its 20 % to its 80 % point, still diverging and centred at 0: the darkest cell keeps 5:1 contrast
# (WCAG asks 4.5:1) with CELL_TEXT_COLOR, where the full scale's dark ends made 12 px numbers unreadable.
LIGHT_DIVERGING = [[float(t), c] for t, c in zip(np.linspace(0, 1, 13),
                                                  sample_colorscale(DIVERGING, list(np.linspace(0.2, 0.8, 13))))]


def _title(title: str | None) -> str | None:
    """Titles name user tokens and sentences: escaped, so they show as typed."""
    return escape(title) if title else None


def _token_axis(labels: list[str], title: str | None = None, **extra) -> dict:
    ticks = list(range(len(labels)))
    return dict(tickmode="array", tickvals=ticks, ticktext=labels, tickangle=-45,
                **({"title": dict(text=title)} if title else {}), **extra)


def lookup_bars(scores, probs, allowed, tokens: Sequence[str], query: int, *, title: str | None = None) -> go.Figure:
    """One query's lookup: q·k_j/√d_k for every key (before the mask; red positive, blue negative, grey where the
    mask hides the key) beside the softmax weights p_j over the keys it may read."""
    s, p = to_numpy(scores).astype(float), to_numpy(probs).astype(float)
    ok = to_numpy(allowed).astype(bool)
    T = len(s)
    if p.shape != (T,) or ok.shape != (T,) or len(tokens) != T or not 0 <= query < T:
        raise ValueError(f"scores, probs, allowed and tokens must all be for the same {T} keys.")
    labels = token_labels(tokens)
    q = labels[query]
    ticks = list(range(T))
    domains, notes = panel_row(("1. score q·k_j / √d_k (before the mask)", "2. softmax weight p_j"), 0.08,
                               font_size=13)
    colors = [MASKED_COLOR if not o else (POSITIVE if x >= 0 else NEGATIVE) for x, o in zip(s, ok)]
    data = [
        dict(type="bar", x=ticks, y=s, name="score", marker=dict(color=colors), xaxis="x", yaxis="y",
             text=[f"{x:.2f}" for x in s], textposition="outside", cliponaxis=False,
             hovertext=[f"q of {q} · k of {labels[j]} / √d_k = {s[j]:.3f}" + ("" if ok[j] else " (masked: the key "
                        "is hidden from this query)") for j in ticks], hoverinfo="text"),
        dict(type="bar", x=ticks, y=np.where(ok, p, 0.0), name="softmax weight", xaxis="x2", yaxis="y2",
             marker=dict(color=[WEIGHT if o else MASKED_COLOR for o in ok]),
             text=[f"{x:.2f}" if o else "masked" for x, o in zip(p, ok)], textposition="outside", cliponaxis=False,
             hovertext=[f"{q} → {labels[j]}: " + (f"p = {p[j]:.3f}" if ok[j] else "masked, p = 0") for j in ticks],
             hoverinfo="text"),
    ]
    bound = float(np.abs(s).max()) * 1.25 or 1.0
    return fast_figure(data, layout_dict(
        _title(title), height=380, top=90 if title else 50, annotations=notes, showlegend=False,
        xaxis=_token_axis(labels, "key", domain=domains[0], anchor="y"),
        yaxis=dict(title=dict(text="score"), range=[-bound, bound], zeroline=True, anchor="x"),
        xaxis2=_token_axis(labels, "key", domain=domains[1], anchor="y2"),
        yaxis2=dict(title=dict(text="weight"), range=[0, 1.15], anchor="x2")))


def score_panels(matrices: Sequence, titles: Sequence[str], tokens: Sequence[str], *,
                 title: str | None = None) -> go.Figure:
    """Several (T, T) score matrices side by side (rows = query, columns = key), each on its own diverging scale
    centred at 0 (their sizes differ by variant), the value printed in each cell (12 px, dark on a light scale) where
    it fits, always in the hover."""
    mats = [to_numpy(m).astype(float) for m in matrices]
    T = len(tokens)
    if not mats or any(m.shape != (T, T) for m in mats) or len(titles) != len(mats):
        raise ValueError(f"give one title per matrix, every matrix {T} × {T} like the tokens.")
    labels = token_labels(tokens)
    idx = list(range(T))
    texts = [np.char.mod("%.1f", m) for m in mats]
    show = shows_text(T, max(len(x) for t in texts for x in t.flat))  # numbers only where 12 px type fits a cell
    domains, notes = panel_row([escape(t) for t in titles], 0.03, font_size=12)
    data, axes = [], {}
    for c, (m, name, text) in enumerate(zip(mats, titles, texts), start=1):
        n = "" if c == 1 else c
        bound = float(np.abs(m).max()) or 1.0
        hover = [[f"{escape(name)}<br>query {labels[i]} · key {labels[j]}: {m[i, j]:.3f}" for j in idx] for i in idx]
        data.append(dict(type="heatmap", z=m.astype(np.float32), x=idx, y=idx, colorscale=LIGHT_DIVERGING,
                         zmin=-bound, zmax=bound, zmid=0, showscale=False, name=escape(name), hovertext=hover,
                         hoverinfo="text", text=text if show else None, texttemplate="%{text}" if show else None,
                         textfont=dict(size=CELL_TEXT_PX, color=CELL_TEXT_COLOR), xgap=1, ygap=1, xaxis=f"x{n}",
                         yaxis=f"y{n}"))
        axes[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=domains[c - 1], tickmode="array", tickvals=idx,
                                 ticktext=labels, tickangle=-60, tickfont=dict(size=10), title=dict(text="key"))
        axes[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=[0.0, 1.0], autorange="reversed", tickmode="array",
                                 tickvals=idx, ticktext=labels, tickfont=dict(size=10), scaleanchor=f"x{n}",
                                 **(dict(title=dict(text="query")) if c == 1 else dict(showticklabels=False)))
    return fast_figure(data, layout_dict(_title(title), height=max(330, 200 + 26 * T), top=90 if title else 50,
                                         annotations=notes, **axes))


def self_attention_bars(labels: Sequence[str], self_share: Sequence[float], diag_max_rate: Sequence[float],
                        chance: float, *, title: str | None = None) -> go.Figure:
    """Per variant: the mean weight a token puts on itself and how often itself is its largest weight, against
    the even-spread baseline (a row that spread its weight evenly; also the chance that the diagonal is the max)."""
    names = [escape(x) for x in labels]
    share, rate = [float(x) for x in self_share], [float(x) for x in diag_max_rate]
    data = [dict(type="bar", x=names, y=share, name="mean weight on itself", marker=dict(color=SERIES[0]),
                 text=[f"{x:.2f}" for x in share], textposition="outside",
                 hovertext=[f"{n}: mean self weight {x:.3f}" for n, x in zip(names, share)], hoverinfo="text"),
            dict(type="bar", x=names, y=rate, name="rows where itself is the largest weight",
                 marker=dict(color=SERIES[1]), text=[f"{x:.0%}" for x in rate], textposition="outside",
                 hovertext=[f"{n}: diagonal is the row max in {x:.0%} of rows" for n, x in zip(names, rate)],
                 hoverinfo="text"),
            dict(type="scatter", x=names, y=[float(chance)] * len(names), mode="lines", name=f"even spread "
                 f"{chance:.3f}", line=dict(dash="dot", color="grey", width=2), hoverinfo="text",
                 hovertext=[f"a row spreading its weight evenly: {chance:.3f} on itself"] * len(names))]
    return fast_figure(data, layout_dict(
        _title(title), height=360, barmode="group",
        legend=dict(orientation="h", y=-0.2), xaxis=dict(title=dict(text="variant")),
        yaxis=dict(title=dict(text="share"), range=[0, 1.15])))


def pair_cosine_bars(labels: Sequence[str], attn_cos: Sequence[Sequence[float]], hidden_cos: Sequence[float],
                     word: str, *, title: str | None = None) -> go.Figure:
    """Per variant: the cosine between the shared word's vectors in the two sentences of a minimal pair, for each
    layer's attention output and for the final hidden state (1 = the same direction, 0 = unrelated)."""
    names = [escape(x) for x in labels]
    attn = [[float(c) for c in row] for row in attn_cos]
    hidden = [float(c) for c in hidden_cos]
    if len(attn) != len(names) or len(hidden) != len(names) or len({len(r) for r in attn}) > 1:
        raise ValueError("give one row of per-layer cosines and one hidden-state cosine per variant.")
    w = escape(visible(word))
    series = [(f"attention output, layer {i}", [r[i] for r in attn]) for i in range(len(attn[0]))]
    series.append(("final hidden state", hidden))
    data = [dict(type="bar", x=names, y=ys, name=s, marker=dict(color=SERIES[i % len(SERIES)]),
                 text=[f"{y:.2f}" for y in ys], textposition="outside",
                 hovertext=[f"{n} · {s} of '{w}': cosine {y:.3f}" for n, y in zip(names, ys)], hoverinfo="text")
            for i, (s, ys) in enumerate(series)]
    lo = min(0.0, *(y for _, ys in series for y in ys)) - 0.1
    return fast_figure(data, layout_dict(
        _title(title), height=380, barmode="group", legend=dict(orientation="h", y=-0.2),
        xaxis=dict(title=dict(text="variant")),
        yaxis=dict(title=dict(text=f"cosine of '{w}' in the two sentences"), range=[lo, 1.12], zeroline=True)))


def loss_bars(labels: Sequence[str], losses: Sequence[float], *, reference: int = 0,
              title: str | None = None) -> go.Figure:
    """Held-out loss per variant (nats per token), the lowest marked, on an axis from 0 (gaps to scale), beside each
    variant's difference from `reference` (an index into labels) in millinats, where small gaps become visible."""
    names = [escape(x) for x in labels]
    ys = [float(x) for x in losses]
    if len(ys) != len(names) or not ys or not 0 <= reference < len(ys):
        raise ValueError("give one loss per variant and the index of the reference variant.")
    best = int(np.argmin(ys))
    diff = [1000 * (y - ys[reference]) for y in ys]
    domains, notes = panel_row(("1. held-out loss (nats per token)", f"2. minus {names[reference]} (millinats)"),
                               0.08, font_size=13)
    data = [dict(type="bar", x=names, y=ys, name="held-out loss", xaxis="x", yaxis="y",
                 marker=dict(color=[SERIES[2] if i == best else WEIGHT for i in range(len(ys))]),
                 text=[f"{y:.4f}" + (" (lowest)" if i == best else "") for i, y in enumerate(ys)],
                 textposition="outside", cliponaxis=False,
                 hovertext=[f"{n}: {y:.4f} nats/token ({y - ys[best]:+.4f} from the lowest)"
                            for n, y in zip(names, ys)], hoverinfo="text"),
            dict(type="bar", x=names, y=diff, name="difference", xaxis="x2", yaxis="y2",
                 marker=dict(color=[POSITIVE if d > 0 else NEGATIVE for d in diff]),
                 text=[f"{d:+.1f}" for d in diff], textposition="outside", cliponaxis=False,
                 hovertext=[f"{n}: {d:+.2f} millinats from {names[reference]}" for n, d in zip(names, diff)],
                 hoverinfo="text")]
    bound = max(abs(d) for d in diff) * 1.3 or 1.0
    return fast_figure(data, layout_dict(
        _title(title), height=380, top=90 if title else 50, annotations=notes, showlegend=False,
        xaxis=dict(domain=domains[0], anchor="y"), xaxis2=dict(domain=domains[1], anchor="y2"),
        yaxis=dict(title=dict(text="nats per token"), range=[0, max(ys) * 1.18], anchor="x"),
        yaxis2=dict(title=dict(text="millinats (+ = worse)"), range=[-bound, bound], zeroline=True, anchor="x2")))
