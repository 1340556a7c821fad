"""Generation figures: next-token bars before/after filtering, the running table, the growing attention rows,
cache latency, and the strategy comparison. Pure functions: arrays in, go.Figure / DataFrame out."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_model.figures.common import (
    MASKED_COLOR,
    SEQUENTIAL,
    escape,
    fast_figure,
    layout_dict,
    to_numpy,
    visible,
    vline,
)
from viz_model.figures.next_token import CHOSEN, KEPT, REMOVED, next_token_bars  # noqa: F401 (shared: Encoder–decoder)


def sequence_table(tokens: Sequence[str], logprobs: Sequence[float], positions: Sequence[int],
                   notes: Sequence[str] | None = None, *, product_text: Callable[[float], str] | None = None
                   ) -> pd.DataFrame:
    """One row per generated token: p, log p and the running product / sum (the lecture's chain rule).
    product_text(running log-sum) writes the running product as text (generate.sci_from_log): as a float it reads
    0 once it falls below 1e-308."""
    lp = np.asarray(logprobs, float)
    cum = np.cumsum(lp)
    return pd.DataFrame({
        "position": list(positions),
        "token": [visible(t) for t in tokens],
        "p(token | prefix)": np.exp(lp),
        "log p": lp,
        "Π p so far": [product_text(float(c)) for c in cum] if product_text else np.exp(cum),
        "Σ log p so far": cum,
        "note": list(notes) if notes is not None else [""] * len(lp),
    })


def attention_rows(
    rows: Sequence,                 # S arrays, row s has length positions[s] (keys 0..positions[s]-1)
    key_tokens: Sequence[str],      # (Tk,) every token of the sequence that was read as a key
    query_positions: Sequence[int], # (S,) position of the query token of each row
    predicted: Sequence[str],       # (S,) the token each row's step produced
    *,
    n_prompt: int,
    title: str | None = None,
) -> go.Figure:
    """Row s = the last prefix token's attention while it predicts new token s; grows one row per step."""
    S, Tk = len(rows), len(key_tokens)
    z = np.full((S, Tk), np.nan)
    for s, r in enumerate(rows):
        r = to_numpy(r)
        z[s, :len(r)] = r
    ok = ~np.isnan(z)
    keys = [escape(visible(t)) for t in key_tokens]
    pred = [escape(visible(t)) for t in predicted]
    ylab = [f"{qp} {keys[qp]} → {pred[s]}" for s, qp in enumerate(query_positions)]
    hover = [[f"query {query_positions[s]} '{keys[query_positions[s]]}' (predicting '{pred[s]}') → key {j} "
              f"'{keys[j]}': " + (f"{z[s, j]:.3f}" if ok[s, j] else "not yet in the sequence")
              for j in range(Tk)] for s in range(S)]
    cols, rows = list(range(Tk)), list(range(S))
    data = [dict(type="heatmap", z=np.where(ok, np.nan, 1.0), colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                 showscale=False, hovertext=hover, hoverinfo="text", name="future", x=cols, y=rows),
            dict(type="heatmap", z=z, x=cols, y=rows, zmin=0, zmax=1, colorscale=SEQUENTIAL, hovertext=hover,
                 hoverinfo="text", hoverongaps=False, name="attention",
                 colorbar=dict(title=dict(text="attention", side="right"), thickness=12))]
    return fast_figure(data, layout_dict(
        title, height=max(300, 150 + 26 * S), top=130 if title else 100, title_top=bool(title),
        shapes=[vline(n_prompt - 0.5, dict(color="white", width=3, dash="dot"))],
        xaxis=dict(tickmode="array", tickvals=cols, ticktext=[f"{j} {k}" for j, k in enumerate(keys)], side="top",
                   title=dict(text="key (the prefix it reads) · dotted line = end of the prompt"), tickangle=-45,
                   automargin=True),
        # automargin: the margin grows to hold the long "3 cat → sat" labels *and* the title beside them
        yaxis=dict(tickmode="array", tickvals=rows, ticktext=ylab, autorange="reversed", automargin=True,
                   title=dict(text="query → new token"))))  # short: it must fit beside a single row


def latency_chart(lengths_on, ms_on, lengths_off, ms_off, title: str | None = None) -> go.Figure:
    """Per-token latency as the sequence grows, with and without the KV cache."""
    data = [dict(type="scatter", x=list(x), y=list(y), mode="lines+markers", name=name, line=dict(color=colour),
                 hovertemplate="sequence length %{x}<br>%{y:.2f} ms<extra>" + name + "</extra>")
            for name, x, y, colour in (("without cache (re-read the whole prefix)", lengths_off, ms_off, "#E45756"),
                                       ("with KV cache (only the new token)", lengths_on, ms_on, KEPT))]
    return fast_figure(data, layout_dict(
        title, height=340, legend=dict(orientation="h", y=-0.25),
        xaxis=dict(title=dict(text="tokens in the sequence when the step runs")),
        yaxis=dict(title=dict(text="ms for this token"), rangemode="tozero")))


def strategy_scatter(df: pd.DataFrame, title: str | None = None) -> go.Figure:
    """One point per strategy: diversity (distinct bigrams) against average log-probability."""
    points = dict(
        type="scatter", x=df["distinct-2"].to_numpy(), y=df["avg log p"].to_numpy(), mode="markers+text",
        text=[escape(s) for s in df["strategy"]],
        textposition=["top center" if i % 2 == 0 else "bottom center" for i in range(len(df))],
        marker=dict(size=14, color=KEPT), name="strategies",
        hovertemplate="%{text}<br>distinct-2 %{x:.2f}<br>avg log p %{y:.2f}<extra></extra>")
    lo = float(np.nanmin(df["avg log p"])) if len(df) else -1.0
    return fast_figure([points], layout_dict(
        title, height=360, xaxis=dict(title=dict(text="diversity: distinct bigrams / all bigrams"), range=[-0.05, 1.1]),
        yaxis=dict(title=dict(text="average log p per token (higher = more likely)"),
                   range=[min(lo * 1.15, lo - 0.3) if math.isfinite(lo) else -5, 0.2])))


def branch_grid(rows: Sequence[Sequence[str]], p: Sequence[Sequence[float]], q: Sequence[Sequence[float]],
                names: Sequence[str], *, start: int, diverge: int | None = None, forced: tuple[int, int] | None = None,
                title: str | None = None) -> go.Figure:
    """One row per branch, one column per new token (the first at sequence position `start`): each cell the token
    written, coloured by the model's p (hover: p and the sampling probability q). A frame marks column `diverge`
    (the first where the branches differ) and cell `forced` (row, column: a token the student forced)."""
    R, C = len(rows), max((len(r) for r in rows), default=0)
    z, text = np.full((R, C), np.nan), [["" for _ in range(C)] for _ in range(R)]
    hover = [["" for _ in range(C)] for _ in range(R)]
    for r, (toks, pr, qr) in enumerate(zip(rows, p, q)):
        for c, (t, a, b) in enumerate(zip(toks, pr, qr)):
            z[r, c], text[r][c] = a, escape(visible(t))
            hover[r][c] = (f"{escape(names[r])} · new token {c + 1} (position {start + c})<br>'{text[r][c]}'<br>"
                           f"model p = {a:.4f}<br>sampled with q = {b:.4f}")
    data = [dict(type="heatmap", z=z, x=list(range(C)), y=list(range(R)), text=text, texttemplate="%{text}",
                 hovertext=hover, hoverinfo="text", hoverongaps=False, zmin=0, zmax=1, colorscale=SEQUENTIAL,
                 name="branches", xgap=2, ygap=2,
                 colorbar=dict(title=dict(text="model p", side="right"), thickness=12))]
    frame = lambda x0, x1, y0, y1, colour: dict(type="rect", x0=x0, x1=x1, y0=y0, y1=y1,  # noqa: E731
                                                 line=dict(color=colour, width=3), fillcolor="rgba(0,0,0,0)")
    shapes = [frame(diverge - 0.5, diverge + 0.5, -0.5, R - 0.5, CHOSEN)] if diverge is not None else []
    if forced is not None:
        shapes.append(frame(forced[1] - 0.5, forced[1] + 0.5, forced[0] - 0.5, forced[0] + 0.5, "#E45756"))
    note = "orange: where they first differ" if diverge is not None else "the branches never differ"
    return fast_figure(data, layout_dict(
        title, height=170 + 48 * R, shapes=shapes,
        xaxis=dict(tickmode="array", tickvals=list(range(C)), ticktext=[str(start + c) for c in range(C)],
                   title=dict(text=f"position · {note}"), side="bottom"),
        yaxis=dict(tickmode="array", tickvals=list(range(R)), ticktext=[escape(n) for n in names],
                   autorange="reversed", automargin=True)))
