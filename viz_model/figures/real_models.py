"""Figures for real checkpoints (GPT-2, Llama...): one page of a layers x heads grid too large to read at once."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.attention import _sub_lines
from viz_model.figures.common import (
    SEQUENTIAL,
    allowed_cells,
    escape,
    fast_figure,
    layout_dict,
    masked_trace,
    to_numpy,
    token_labels,
)

TILE_PX = 110    # a head's tile, tall (its width follows the page's)
NOTE_PX = 22     # a line of a tile's title above it


def attention_grid_page(
    probs,                         # (L, H, T, T) attention of every layer and head of the model
    tokens: Sequence[str],
    layers: Sequence[int],         # the layers on this page (rows), e.g. [4, 5, 6, 7]
    heads: Sequence[int],          # the heads on this page (columns)
    *,
    roles: list[list[str]] | None = None,  # (L, H) subtitles of the whole model, e.g. "previous-token 0.93"
    kv_group: int = 1,             # query heads per K/V head (grouped-query attention); > 1 names each head's K/V
    title: str | None = None,
    allowed=None,                  # (T, T) bool: False cells were masked (grey)
) -> go.Figure:
    """Some layers and heads of the model as ONE heatmap of tiles, one tile per head, labelled with their indices in
    the whole model (L5·H2, and the K/V head it reads under grouped-query attention: query head h reads K/V head
    h // kv_group); layout.meta["tiles"] names the tiles row by row.

    One heatmap, not a subplot per head (#42 item 6): Chromium drew a page of 4 x 12 heads as 48 subplots in 214 ms
    and as one tiled heatmap in 18 ms (bench/bench_grid_draw.py), which a class of 30 on GPT-2 small waited for on
    every new sentence. The tiles are apart by rows and columns of holes (NaN), which hover nothing."""
    layers, heads = [int(i) for i in layers], [int(h) for h in heads]
    a = to_numpy(probs)[np.ix_(layers, heads)]     # (nl, nh, Tq, Tk)
    nl, nh, tq, tk = a.shape
    ok = allowed_cells(allowed, (tq, tk))          # (Tq, Tk)
    subs = [[_subtitle(roles, kv_group, lyr, h) for h in heads] for lyr in layers]
    lines = 1 + max((len(_sub_lines(s)) for row in subs for s in row if s), default=0)
    gx, gy = max(1, round(tk / 16)), math.ceil(tq * lines * NOTE_PX / TILE_PX)  # gaps, in cells
    z = _tiled(np.where(ok, a, np.nan), gx, gy, np.nan).astype(np.float32)     # (nl·(Tq+gy), nh·(Tk+gx)-gx)
    blocked = _tiled(np.broadcast_to(~ok, a.shape).astype(np.float32), gx, gy, np.nan)  # 1 masked, 0 not, gaps NaN
    x = _labels([f"H{h} · {lab}" for h in heads for lab in token_labels(tokens)], tk, gx)
    y = _labels([f"L{lyr} · {lab}" for lyr in layers for lab in token_labels(tokens)], tq, gy, lead=True)
    hover = "query '%{y}' → key '%{x}': "
    under = masked_trace(ok, x, y, hoverongaps=False, hovertemplate=hover + "masked (−∞)<extra></extra>")
    data = [] if ok.all() else [under | dict(z=blocked)]  # grey under the holes of masked cells, none in the gaps
    data.append(dict(type="heatmap", z=z, x=x, y=y, zmin=0, zmax=1, colorscale=SEQUENTIAL, name="attention",
                     hoverongaps=False, hovertemplate=hover + "%{z:.3f}<extra></extra>",
                     colorbar=dict(thickness=10, title=dict(text="attention"))))
    # a tile's title stands in the gap above it: one text trace, not 48 annotations (Chromium laid those out one
    # by one: 75 of a page's 126 ms, measured with bench/bench_grid_draw.py's forms)
    spots = [(x[j * (tk + gx) + tk // 2], y[i * (tq + gy) + gy - 1]) for i in range(nl) for j in range(nh)]
    data.append(dict(type="scatter", mode="text", name="titles", x=[p[0] for p in spots], y=[p[1] for p in spots],
                     text=[f"L{lyr}·H{h}" + "".join(f"<br><sub>{escape(s)}</sub>" for s in _sub_lines(sub) if sub)
                           for lyr, row in zip(layers, subs) for h, sub in zip(heads, row)],
                     textposition="top center", textfont=dict(size=13), hoverinfo="skip", showlegend=False))
    plain = dict(type="category", showticklabels=False, ticks="", showgrid=False, zeroline=False)
    top = 60 if title else 10
    layout = layout_dict(title, height=top + nl * (TILE_PX + lines * NOTE_PX), top=top, title_top=bool(title),
                         xaxis=plain, yaxis=dict(autorange="reversed", **plain),
                         meta=dict(tiles=[f"L{lyr}H{h}" for lyr in layers for h in heads]))
    return fast_figure(data, layout)


def _subtitle(roles: list[list[str]] | None, kv_group: int, layer: int, head: int) -> str:
    return " · ".join(x for x in ((roles[layer][head] if roles else ""),
                                  (f"K/V {head // kv_group}" if kv_group > 1 else "")) if x)


def _tiled(cells: np.ndarray, gx: int, gy: int, fill) -> np.ndarray:
    """(nl, nh, Tq, Tk) tiles -> one (nl·(Tq+gy), nh·(Tk+gx)-gx) array, `fill` around them: gy rows above each
    row of tiles (its titles stand there), gx columns between the tiles of a row."""
    nl, nh, tq, tk = cells.shape
    out = np.full((nl * (tq + gy), nh * (tk + gx) - gx), fill, dtype=cells.dtype)
    for i in range(nl):
        for j in range(nh):
            r0, c0 = i * (tq + gy) + gy, j * (tk + gx)
            out[r0:r0 + tq, c0:c0 + tk] = cells[i, j]
    return out


def _labels(per_cell: list[str], size: int, gap: int, lead: bool = False) -> list[str]:
    """Category labels along one axis: the tiles' own (`size` each), and unique blanks for the gaps between them
    (and before the first tile too, with `lead`)."""
    out = []
    for t in range(len(per_cell) // size):
        out += [f"{' ' * (k + 1)}\u200b{t}" for k in range(gap)] if (t or lead) else []
        out += per_cell[t * size:(t + 1) * size]
    return out
