"""Figures for the Logit lens page: the layers x positions map of the lens's top token, and the rank of the model's
final prediction at each layer (log scale)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import SEQUENTIAL, axis, escape, fast_figure, layout_dict, token_labels, visible

ROW_PX = 44         # one layer's row: room for a token written in 12 px type
CELL_CHARS_PX = 900  # about the chart's width beside the sidebar: a cell gets 900 / T px of text


def cell_text(token: str, chars: int) -> str:
    """A token as a cell shows it: whitespace visible, cut to `chars` with "…", escaped (shown exactly as typed)."""
    t = visible(token)
    return escape(t if len(t) <= chars else t[: max(chars - 1, 1)] + "…")


def top_token_map(top_p, top_text: Sequence[Sequence[Sequence[str]]], tokens: Sequence[str],
                  rows: Sequence[str], title: str | None = None) -> go.Figure:
    """top_p (rows, T, k) probabilities, top_text [row][position][k] token texts (best first); tokens: the T input
    tokens; rows: the rows' names, bottom to top (embeddings first). Each cell is coloured by the top token's
    probability and shows that token; the hover gives layer, position, input token and the top k."""
    p = np.asarray(top_p, dtype=float)
    R, T, k = p.shape
    if len(top_text) != R or len(tokens) != T or len(rows) != R:
        raise ValueError(f"the lens map needs {R} rows of {T} positions, with a name per row and a token per position.")
    chars = max(3, min(10, CELL_CHARS_PX // (T * 8)))
    text = [[cell_text(top_text[r][t][0], chars) for t in range(T)] for r in range(R)]
    hover = [[f"{escape(rows[r])}, position {t} (input {escape(visible(tokens[t]))})<br>top {k}: " + "<br>".join(
        f"{escape(visible(top_text[r][t][j]))} {p[r, t, j]:.1%}" for j in range(k)) for t in range(T)]
        for r in range(R)]
    trace = dict(type="heatmap", z=p[:, :, 0], x=list(range(T)), y=list(range(R)), text=text,
                 texttemplate="%{text}", textfont=dict(size=12 if T <= 16 else 10), hovertext=hover,
                 hoverinfo="text", colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, name="top token", xgap=1, ygap=1,
                 colorbar=dict(thickness=12, title=dict(text="top p", side="right")))
    labels = token_labels(tokens)
    layout = layout_dict(title, height=ROW_PX * R + (170 if T > 8 else 130), top=50 if title else 20,
                         xaxis=axis("input position (predicting the token after it)", tickmode="array",
                                    tickvals=list(range(T)), ticktext=labels, tickangle=-45 if T > 8 else 0),
                         yaxis=axis("residual stream after", tickmode="array", tickvals=list(range(R)),
                                    ticktext=[escape(r) for r in rows]))
    return fast_figure([trace], layout)


def rank_curve(rank, prob, rows: Sequence[str], target: str, position: str, vocab: int,
               title: str | None = None) -> go.Figure:
    """rank (rows,) of the model's final prediction in each row's lens (1 = top) and its probability there, on a
    log-scale rank axis from 1 to the vocabulary's size."""
    r, q = np.asarray(rank, dtype=float), np.asarray(prob, dtype=float)
    if r.shape != (len(rows),) or q.shape != r.shape:
        raise ValueError("the rank curve needs one rank and one probability per row.")
    hover = [f"{escape(rows[i])}: {escape(visible(target))} is rank {int(r[i]):,} of {vocab:,} (p = {q[i]:.2%})"
             for i in range(len(rows))]
    trace = dict(type="scatter", mode="lines+markers", x=list(range(len(rows))), y=r, name="rank",
                 hovertext=hover, hoverinfo="text", marker=dict(size=9))
    top = float(np.log10(max(vocab, 10)))
    name = escape(visible(target.strip() or target))
    layout = layout_dict(title or f"Rank of “{name}” after {escape(visible(position))}, layer by layer", height=340,
                         top=60,
                         xaxis=axis("residual stream after", tickmode="array", tickvals=list(range(len(rows))),
                                    ticktext=[escape(x) for x in rows]),
                         yaxis=axis("rank (1 = top, log scale)", type="log",
                                    range=[top + 0.1, -0.1]),
                         showlegend=False)
    return fast_figure([trace], layout)
