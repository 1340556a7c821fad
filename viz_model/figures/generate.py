"""Generation figures: next-token bars before/after filtering, the running table, the growing attention rows,
cache latency, and the strategy comparison. Pure functions: arrays in, go.Figure / DataFrame out."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_model.figures.common import MASKED_COLOR, SEQUENTIAL, base_layout, escape, to_numpy, visible

KEPT, REMOVED, CHOSEN = "#4C78A8", "rgba(160,160,160,0.55)", "#F58518"


def top_candidates(probs, filtered, chosen: int, n: int = 10) -> np.ndarray:
    """Ids of the n most probable tokens under the model (plus the chosen one if it is not among them)."""
    p = to_numpy(probs)
    top = np.argsort(-p, kind="stable")[:n]
    return top if chosen in top else np.append(top, chosen)


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
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04, subplot_titles=(
        "1. model: p(next | prefix)", f"2. after {escape(strategy) or 'filtering'} (renormalised)"))
    fig.add_trace(go.Bar(x=p, y=y, orientation="h", marker_color=colours, name="model p",
                         text=[f"{v:.3f}" for v in p], textposition="outside", cliponaxis=False,
                         hovertext=hover, hoverinfo="text"), row=1, col=1)
    fig.add_trace(go.Bar(x=q, y=y, orientation="h", marker_color=[c if k else REMOVED for c, k in zip(colours, kept)],
                         name="after filter", text=[f"{v:.3f}" if k else "removed" for v, k in zip(q, kept)],
                         textposition="outside", cliponaxis=False, hovertext=hover, hoverinfo="text"), row=1, col=2)
    top = max(float(p.max(initial=0)), float(q.max(initial=0)), 1e-9)
    fig.update_xaxes(range=[0, min(1.0, top) * 1.3], title="probability")
    fig.update_yaxes(tickmode="array", tickvals=y, ticktext=[("▶ " if i == chosen else "") + n for i, n in
                                                              enumerate(names)], autorange="reversed", row=1, col=1)
    fig = base_layout(fig, title, height=140 + 26 * len(names))
    fig.update_layout(showlegend=False, bargap=0.25)
    return fig


def sequence_table(tokens: Sequence[str], logprobs: Sequence[float], positions: Sequence[int],
                   notes: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per generated token: p, log p and the running product / sum (the lecture's chain rule)."""
    lp = np.asarray(logprobs, float)
    cum = np.cumsum(lp)
    return pd.DataFrame({
        "position": list(positions),
        "token": [visible(t) for t in tokens],
        "p(token | prefix)": np.exp(lp),
        "log p": lp,
        "Π p so far": np.exp(cum),
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
    fig = go.Figure()
    fig.add_trace(go.Heatmap(z=np.where(ok, np.nan, 1.0), colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                             showscale=False, hovertext=hover, hoverinfo="text", name="future", x=list(range(Tk)),
                             y=list(range(S))))
    fig.add_trace(go.Heatmap(z=z, x=list(range(Tk)), y=list(range(S)), zmin=0, zmax=1, colorscale=SEQUENTIAL,
                             hovertext=hover, hoverinfo="text", hoverongaps=False, name="attention",
                             colorbar=dict(title=dict(text="attention", side="right"), thickness=12)))
    fig.add_vline(x=n_prompt - 0.5, line=dict(color="white", width=3, dash="dot"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(Tk)), ticktext=[f"{j} {k}" for j, k in enumerate(keys)],
                     title="key (the prefix it reads) · dotted line = end of the prompt", side="top", tickangle=-45)
    fig.update_yaxes(tickmode="array", tickvals=list(range(S)), ticktext=ylab, autorange="reversed",
                     title="query → the token it produced")
    fig = base_layout(fig, title, height=max(300, 150 + 26 * S))
    fig.update_layout(margin=dict(t=130 if title else 100), title=dict(y=0.99, yanchor="top"))
    return fig


def latency_chart(lengths_on, ms_on, lengths_off, ms_off, title: str | None = None) -> go.Figure:
    """Per-token latency as the sequence grows, with and without the KV cache."""
    fig = go.Figure()
    for name, x, y, colour in (("without cache (re-read the whole prefix)", lengths_off, ms_off, "#E45756"),
                               ("with KV cache (only the new token)", lengths_on, ms_on, KEPT)):
        fig.add_trace(go.Scatter(x=list(x), y=list(y), mode="lines+markers", name=name, line=dict(color=colour),
                                 hovertemplate="sequence length %{x}<br>%{y:.2f} ms<extra>" + name + "</extra>"))
    fig.update_xaxes(title="tokens in the sequence when the step runs")
    fig.update_yaxes(title="ms for this token", rangemode="tozero")
    fig = base_layout(fig, title, height=340)
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return fig


def strategy_scatter(df: pd.DataFrame, title: str | None = None) -> go.Figure:
    """One point per strategy: diversity (distinct bigrams) against average log-probability."""
    fig = go.Figure(go.Scatter(
        x=df["distinct-2"], y=df["avg log p"], mode="markers+text", text=[escape(s) for s in df["strategy"]],
        textposition=["top center" if i % 2 == 0 else "bottom center" for i in range(len(df))],
        marker=dict(size=14, color=KEPT), name="strategies",
        hovertemplate="%{text}<br>distinct-2 %{x:.2f}<br>avg log p %{y:.2f}<extra></extra>"))
    fig.update_xaxes(title="diversity: distinct bigrams / all bigrams", range=[-0.05, 1.1])
    lo = float(np.nanmin(df["avg log p"])) if len(df) else -1.0
    fig.update_yaxes(title="average log p per token (higher = more likely)",
                     range=[min(lo * 1.15, lo - 0.3) if math.isfinite(lo) else -5, 0.2])
    return base_layout(fig, title, height=360)
