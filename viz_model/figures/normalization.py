"""Normalization figures: which cells of an (N, T, d) batch share statistics, BatchNorm's batch statistics with and
without padding, gradients per layer, loss curves, and each sample's own T×T attention matrix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import (
    COLORWAY,
    DIVERGING,
    SEQUENTIAL,
    axis,
    escape,
    fast_figure,
    layout_dict,
    panel_row,
    to_numpy,
    token_labels,
)

GROUP_LINE = "#222222"      # the outline of every group of cells that share one mean and variance
HIGHLIGHT = "#FF7F0E"       # the first group, drawn thicker: "these cells are normalised together"
PALETTE = tuple(COLORWAY[:6])  # colour-blind-safe series (Tableau's orange and green merge under protanopia)
TOKENWISE = ("layernorm", "rmsnorm")
KIND_NAMES = {"layernorm": "LayerNorm", "batchnorm": "BatchNorm", "rmsnorm": "RMSNorm"}


def _row_labels(N: int, T: int) -> list[str]:
    return [f"s{n + 1}·t{t}" for n in range(N) for t in range(T)]


def _group_shapes(kind: str, N: int, T: int, d: int) -> list[dict]:
    """One rectangle per group of cells normalised together: a row (token) for LayerNorm/RMSNorm, a column
    (feature over all N×T rows) for BatchNorm; dashed lines between samples show the N axis."""
    rows = N * T
    if kind in TOKENWISE:
        boxes = [(-0.5, d - 0.5, r - 0.5, r + 0.5) for r in range(rows)]
    else:
        boxes = [(j - 0.5, j + 0.5, -0.5, rows - 0.5) for j in range(d)]
    shapes = [dict(type="rect", xref="x", yref="y", x0=x0, x1=x1, y0=y0, y1=y1,
                   line=dict(color=HIGHLIGHT if i == 0 else GROUP_LINE, width=4 if i == 0 else 2))
              for i, (x0, x1, y0, y1) in enumerate(boxes)]
    shapes = shapes[1:] + shapes[:1]  # the highlighted group on top
    if kind not in TOKENWISE:  # (for the token-wise norms every row edge is a group edge already)
        shapes += [dict(type="line", xref="x", yref="y", x0=-0.5, x1=d - 0.5, y0=n * T - 0.5, y1=n * T - 0.5,
                        line=dict(color="#FFFFFF", width=3, dash="dot")) for n in range(1, N)]
    return shapes


def _group_text(kind: str, stats: Mapping[str, np.ndarray], n: int, t: int, j: int) -> str:
    where = (n, t) if kind in TOKENWISE else (j,)
    values = ", ".join(f"{escape(k)} {float(v[where]):.3g}" for k, v in stats.items())
    who = f"the features of token s{n + 1}·t{t}" if kind in TOKENWISE else f"feature f{j} over all N×T tokens"
    return f"normalised together with {who}<br>output {values}"


def norm_groups(output, kind: str, stats: Mapping[str, np.ndarray], *, title: str | None = None) -> go.Figure:
    """The normalised (N, T, d) batch unfolded as N·T token rows × d feature columns (coloured by value: red
    positive, blue negative), with an outline around every group of cells that share one set of statistics
    (orange: the first group); for BatchNorm dotted white lines separate the samples. stats maps
    a statistic's name to its value per group: (N, T) for LayerNorm/RMSNorm, (d,) for BatchNorm."""
    y = to_numpy(output).astype(float)
    if y.ndim != 3:
        raise ValueError(f"the batch must be shaped (N, T, d), got {y.shape}.")
    N, T, d = y.shape
    if kind not in KIND_NAMES:
        raise ValueError(f"kind must be one of {tuple(KIND_NAMES)}, got {kind!r}.")
    stats = {k: to_numpy(v).astype(float) for k, v in stats.items()}
    flat = y.reshape(N * T, d)
    rows = _row_labels(N, T)
    hover = [[f"sample {n + 1}, position {t}, feature f{j}: {flat[n * T + t, j]:.3f}<br>"
              + _group_text(kind, stats, n, t, j) for j in range(d)] for n in range(N) for t in range(T)]
    bound = float(np.abs(flat).max()) or 1.0
    data = [dict(type="heatmap", z=flat, x=list(range(d)), y=list(range(N * T)), colorscale=DIVERGING, zmin=-bound,
                 zmax=bound, name=KIND_NAMES[kind], hovertext=hover, hoverinfo="text", showscale=False)]
    layout = layout_dict(title, height=max(260, 90 + 22 * N * T), shapes=_group_shapes(kind, N, T, d),
                         xaxis=axis("feature", tickmode="array", tickvals=list(range(d)),
                                    ticktext=[f"f{j}" for j in range(d)], tickfont=dict(size=10), showgrid=False),
                         yaxis=axis(None, tickmode="array", tickvals=list(range(N * T)), ticktext=rows,
                                    autorange="reversed", tickfont=dict(size=10), showgrid=False))
    return fast_figure(data, layout)


def padding_bars(mean_before, mean_after, var_before, var_after, *, n_pad: int,
                 title: str | None = None) -> go.Figure:
    """BatchNorm's per-feature batch mean and variance (over all N×T tokens), without and with n_pad padding
    positions in sample 2: two panels of paired bars."""
    arrays = [to_numpy(a).astype(float) for a in (mean_before, mean_after, var_before, var_after)]
    d = arrays[0].shape[0]
    if any(a.shape != (d,) for a in arrays):
        raise ValueError("the four statistics must each hold one number per feature.")
    feats = [f"f{j}" for j in range(d)]
    domains, notes = panel_row(["batch mean per feature", "batch variance per feature"], 0.08, font_size=13)
    data = []
    for c, (stat, before, after) in enumerate((("mean", arrays[0], arrays[1]), ("variance", arrays[2], arrays[3]))):
        n = "" if c == 0 else 2
        for label, values, color in (("no padding", before, PALETTE[0]),
                                     (f"{n_pad} padding position{'s' if n_pad != 1 else ''} in sample 2", after,
                                      PALETTE[1])):
            data.append(dict(type="bar", x=feats, y=values.tolist(), name=label, marker=dict(color=color),
                             legendgroup=label, showlegend=c == 0, xaxis=f"x{n}", yaxis=f"y{n}",
                             hovertemplate=f"{label}<br>%{{x}}: batch {stat} %{{y:.3f}}<extra></extra>"))
    return fast_figure(data, layout_dict(
        title, height=320, annotations=notes, barmode="group", legend=dict(orientation="h", y=-0.25, x=0),
        xaxis=dict(domain=domains[0], anchor="y", title=dict(text="feature")),
        yaxis=dict(anchor="x", title=dict(text="mean over N×T")),
        xaxis2=dict(domain=domains[1], anchor="y2", title=dict(text="feature")),
        yaxis2=dict(anchor="x2", title=dict(text="variance over N×T"))))


def _line(ln: dict, i: int, x: list, hover: str) -> dict:
    return dict(type="scatter", mode=ln.get("mode", "lines+markers"), x=x, y=[float(v) for v in ln["y"]],
                name=escape(ln["name"]), line=dict(color=ln.get("color", PALETTE[i % len(PALETTE)]),
                                                   dash=ln.get("dash", "solid"), width=2),
                marker=dict(size=6), hovertemplate=f"{escape(ln['name'])}<br>{hover}<extra></extra>")


def per_layer_chart(lines: Sequence[dict], *, y_title: str, log_y: bool = True, title: str | None = None,
                    height: int = 360) -> go.Figure:
    """One value per block (block 1 = nearest the input), one line per setup. Each line: name, y (one value per
    block), optional color and dash."""
    data = [_line(ln, i, list(range(1, len(ln["y"]) + 1)), "block %{x}: %{y:.3g}") for i, ln in enumerate(lines)]
    n = max((len(ln["y"]) for ln in lines), default=1)
    return fast_figure(data, layout_dict(
        title, height=height, hovermode="closest", legend=dict(orientation="h", y=-0.25, x=0),
        xaxis=axis("block (1 = nearest the input)", tickmode="array", tickvals=list(range(1, n + 1))),
        yaxis=axis(f"{y_title}{' (log scale)' if log_y else ''}", **({"type": "log"} if log_y else {}))))


def loss_chart(lines: Sequence[dict], *, title: str | None = None, height: int = 360) -> go.Figure:
    """Training loss per step, one line per setup (name, y, optional color and dash), all from the same seed."""
    data = [_line({**ln, "mode": "lines"}, i, list(range(1, len(ln["y"]) + 1)), "step %{x}: loss %{y:.3f}")
            for i, ln in enumerate(lines)]
    return fast_figure(data, layout_dict(
        title, height=height, hovermode="closest", legend=dict(orientation="h", y=-0.25, x=0),
        xaxis=axis("training step"), yaxis=axis("training loss (nats per token)")))


def sample_matrices(probs, tokens: Sequence[Sequence[str]], titles: Sequence[str], *,
                    title: str | None = None) -> go.Figure:
    """probs (n, T, T): one head's attention weights for each sample of a batch, side by side (each sample its
    own T×T matrix)."""
    p = to_numpy(probs).astype(float)
    if p.ndim != 3 or p.shape[1] != p.shape[2] or len(tokens) != p.shape[0] or len(titles) != p.shape[0]:
        raise ValueError("give one (T, T) matrix, one token list and one title per sample.")
    T = p.shape[1]
    domains, notes = panel_row([escape(t) for t in titles], 0.12, font_size=13)
    data, axes = [], {}
    for s in range(p.shape[0]):
        labels = token_labels(list(tokens[s]))
        if len(labels) != T:
            raise ValueError(f"sample {s + 1} needs {T} token labels, got {len(labels)}.")
        n = "" if s == 0 else s + 1
        hover = [[f"{escape(titles[s])}<br>query {labels[i]} → key {labels[j]}: {p[s, i, j]:.3f}" for j in range(T)]
                 for i in range(T)]
        data.append(dict(type="heatmap", z=p[s], x=list(range(T)), y=list(range(T)), colorscale=SEQUENTIAL, zmin=0,
                         zmax=1, showscale=s == p.shape[0] - 1, name=f"sample {s + 1}", hovertext=hover,
                         hoverinfo="text", xgap=1, ygap=1, xaxis=f"x{n}", yaxis=f"y{n}",
                         colorbar=dict(title=dict(text="weight"), thickness=10)))
        ticks = dict(tickmode="array", tickvals=list(range(T)), ticktext=labels, tickfont=dict(size=10))
        axes[f"xaxis{n}"] = dict(domain=domains[s], anchor=f"y{n}", title=dict(text="key"), tickangle=-60, **ticks)
        axes[f"yaxis{n}"] = dict(anchor=f"x{n}", autorange="reversed", title=dict(text="query"), **ticks)
    return fast_figure(data, layout_dict(title, height=max(320, 170 + 22 * T), annotations=notes, **axes))
