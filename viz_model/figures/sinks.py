"""Figures for the Attention sinks page: the first token's share per head, the loss without the first token, and the
loss over a stream for three KV caches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import COLORWAY, SEQUENTIAL, axis, escape, fast_figure, layout_dict, to_numpy

METHODS = {"window": "window alone", "sinks": "window + first {s} kept", "recompute": "recompute the window"}
DASHES = {"window": "solid", "sinks": "dash", "recompute": "dot"}


def share_heatmap(share, first: str, title: str | None = None) -> go.Figure:
    """share (L, H) in [0, 1]: layers down, heads across, each cell's number written in."""
    s = to_numpy(share).astype(float)
    L, H = s.shape
    first = escape(first)
    hover = [[f"layer {layer}, head {h}: {s[layer, h]:.3f} of each row's weight on the first token ({first})"
              for h in range(H)] for layer in range(L)]
    text = [[f"{v:.2f}" for v in row] for row in s]
    data = [dict(type="heatmap", z=s, x=list(range(H)), y=list(range(L)), zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL,
                 text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text", name="first-token share",
                 colorbar=dict(thickness=12, title=dict(text="share", side="right")))]
    return fast_figure(data, layout_dict(title, height=max(240, 60 * L + 120),
                                         xaxis=axis("head", tickmode="array", tickvals=list(range(H)), side="bottom"),
                                         yaxis=axis("layer", tickmode="array", tickvals=list(range(L)),
                                                    autorange="reversed")))


def loss_bars(rows: Sequence[Mapping], title: str | None = None) -> go.Figure:
    """One horizontal bar per input (as is, first token dropped, hidden; top to bottom): the mean loss, its change
    from 'as is' written on (horizontal: the long names stay readable on a phone)."""
    names = [str(r["input"]) for r in rows]
    loss = [float(r["loss (nats)"]) for r in rows]
    base = loss[0]
    text = [f"{v:.3f}" + ("" if i == 0 else f" ({v - base:+.3f})") for i, v in enumerate(loss)]
    hover = [f"{n}: loss {v:.4f} nats, perplexity {np.exp(v):.4g}" for n, v in zip(names, loss)]
    data = [dict(type="bar", orientation="h", y=names, x=loss, text=text, textposition="auto", hovertext=hover,
                 hoverinfo="text", marker=dict(color=COLORWAY[:len(names)]), name="mean loss", cliponaxis=False)]
    return fast_figure(data, layout_dict(title, height=300, xaxis=axis("mean loss (nats)",
                                                                       range=[0, max(loss) * 1.05]),
                                         yaxis=axis(None, autorange="reversed", automargin=True)))


def running_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Mean of the last k values at every index (fewer at the start)."""
    c = np.cumsum(np.concatenate([[0.0], np.asarray(x, dtype=float)]))
    i = np.arange(1, len(x) + 1)
    return (c[i] - c[np.maximum(i - k, 0)]) / np.minimum(i, k)


def stream_lines(results: Sequence, k: int = 32, title: str | None = None) -> go.Figure:
    """Per window (a panel each, stacked), the running-mean loss over the stream for the three methods; a dotted
    line where the cache first fills. results: lessons.sinks.StreamResult values."""
    data, axes, shapes = [], {}, []
    n = len(results)
    gap = 0.08 if n > 1 else 0.0
    h = (1 - gap * (n - 1)) / max(n, 1)
    for p, r in enumerate(results):
        ax = "" if p == 0 else p + 1
        top = 1 - p * (h + gap)
        for c, (method, label) in enumerate(METHODS.items()):
            y = running_mean(r.losses[method], k)
            data.append(dict(type="scatter", mode="lines", x=list(range(1, len(y) + 1)), y=y, xaxis=f"x{ax}",
                             yaxis=f"y{ax}", name=f"W={r.window}: " + label.format(s=r.sinks), legendgroup=method,
                             line=dict(color=COLORWAY[c], dash=DASHES[method], width=2),
                             hovertemplate=f"W={r.window}, {label.format(s=r.sinks)}<br>token %{{x}}: mean loss of "
                                           f"the last {k} %{{y:.3f}} nats<extra></extra>"))
        axes[f"xaxis{ax}"] = axis("token position in the stream" if p == n - 1 else None, anchor=f"y{ax}",
                                  matches="x" if p else None)
        axes[f"yaxis{ax}"] = axis(f"loss, W={r.window} (nats)", anchor=f"x{ax}",
                                  domain=[round(max(top - h, 0.0), 6), round(min(top, 1.0), 6)])
        shapes.append(dict(type="line", xref=f"x{ax}", x0=r.window, x1=r.window, yref=f"y{ax} domain", y0=0, y1=1,
                           line=dict(color="#777777", dash="dot", width=1)))
    for a in axes.values():
        if a.get("matches") is None:
            a.pop("matches", None)
    legend = dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")  # under the title, over the plot
    return fast_figure(data, layout_dict(title, height=150 + 260 * n, top=100 if title else 60, title_top=bool(title),
                                         shapes=shapes, legend=legend, **axes))
