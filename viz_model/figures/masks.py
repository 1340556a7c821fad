"""Mask figures: boolean mask → additive 0/−∞ → scores + mask → softmax, side by side; dependency map."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import (
    DIVERGING,
    MASKED_COLOR,
    SEQUENTIAL,
    domain,
    fast_figure,
    hline,
    layout_dict,
    shows_text,
    to_numpy,
    token_labels,
)

PANELS = ("1. boolean mask<br>(may attend?)", "2. additive mask M<br>(0 / −∞)", "3. scores S + M<br>(before softmax)",
          "4. softmax(S + M)<br>(after)")  # two lines each: a title fits over its panel on a 390 px phone


def _fmt(x: float) -> str:
    return "−∞" if x == -np.inf else f"{x:.2f}"


def _ticks(labels: list[str]) -> dict:
    """Token labels at 0..T-1 in small type; a fresh dict for each axis (a figure's axes share no mutable parts)."""
    return dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, tickfont=dict(size=10))


def mask_panels(allowed, scores, probs, tokens: Sequence[str], *, title: str | None = None) -> go.Figure:
    """Four heatmaps of one head under one mask. allowed (T, T) bool, scores (T, T) raw S, probs (T, T)."""
    ok = to_numpy(allowed).astype(bool)
    s, p = to_numpy(scores).astype(float), to_numpy(probs).astype(float)
    T = ok.shape[0]
    if s.shape != (T, T) or p.shape != (T, T) or len(tokens) != T:
        raise ValueError(f"mask, scores, probs and tokens must all be for the same {T} tokens.")
    labels = token_labels(tokens)
    additive = np.where(ok, 0.0, -np.inf)
    masked = s + additive
    show = {"mask": shows_text(T, 1), "additive": shows_text(T, 2), "scores": shows_text(T, 5),
            "probs": shows_text(T, 4)}  # "✓", "−∞", "−0.53", "0.53"
    idx = list(range(T))

    def hover(fmt) -> list[list[str]]:
        return [[f"query {labels[i]} → key {labels[j]}: {fmt(i, j)}" for j in idx] for i in idx]

    bound = float(np.abs(s).max()) or 1.0
    panels = [
        ("mask", ok.astype(float), [[0, "#f3f3f3"], [1, "#2f6db5"]], 0, 1,
         np.where(ok, "✓", "✗"), hover(lambda i, j: "allowed" if ok[i, j] else "blocked")),
        ("additive", np.where(ok, 0.0, 1.0), [[0, "#ffffff"], [1, MASKED_COLOR]], 0, 1,
         np.where(ok, "0", "−∞"), hover(lambda i, j: _fmt(additive[i, j]))),
        ("scores", np.where(ok, s, np.nan), DIVERGING, -bound, bound,
         np.vectorize(_fmt)(masked), hover(lambda i, j: _fmt(masked[i, j]))),
        ("probs", np.where(ok, p, np.nan), SEQUENTIAL, 0, 1,
         np.where(ok, np.vectorize(lambda x: f"{x:.2f}")(p), "0"), hover(lambda i, j: f"{p[i, j]:.3f}")),
    ]
    domains, notes, height = _two_by_two(T)
    data, axes = [], {}
    for c, (name, z, scale, lo, hi, text, hv) in enumerate(panels, start=1):
        n = "" if c == 1 else c  # Plotly names the first axes x / y, then x2 / y2 ...
        ax = dict(xaxis=f"x{n}", yaxis=f"y{n}")
        axes[f"xaxis{n}"] = dict(anchor=f"y{n}", domain=domains[c - 1][0], tickangle=-60, side="bottom",
                                 **_ticks(labels))
        axes[f"yaxis{n}"] = dict(anchor=f"x{n}", domain=domains[c - 1][1], autorange="reversed", **_ticks(labels),
                                 **(dict(title=dict(text="query")) if c % 2 else dict(showticklabels=False)))
        if name in ("scores", "probs") and not ok.all():  # blocked cells: grey underlay, never a colour
            data.append(dict(type="heatmap", z=np.where(ok, np.nan, 1.0), x=idx, y=idx, showscale=False,
                             name=f"{name} masked", colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], hovertext=hv,
                             hoverinfo="text", **ax))
        data.append(dict(type="heatmap", z=z, x=idx, y=idx, colorscale=scale, zmin=lo, zmax=hi, showscale=False,
                         name=name, text=text if show[name] else None,
                         texttemplate="%{text}" if show[name] else None,
                         hovertext=hv, hoverinfo="text", hoverongaps=False, xgap=1, ygap=1, **ax))
    return fast_figure(data, layout_dict(title, height=height, top=90 if title else 50, title_top=bool(title),
                                         annotations=notes, **axes))


def _two_by_two(T: int) -> tuple[list[tuple[list[float], list[float]]], list[dict], int]:
    """The four panels as two rows of two, each a title above it: (x domain, y domain) per panel, the titles, the
    figure's height in px. Two across, not four, so a panel and its title keep a readable width on a phone (four
    titles side by side ran into each other at 390 px) and its cells on a laptop."""
    panel, gap, edges = max(200, 40 + 22 * T), 150, 140  # px: a panel; the gap for tick labels and titles; margins
    height = edges + 2 * panel + gap
    cut = panel / (2 * panel + gap)  # a row's share of the plot's height
    xs, ys = [domain(0.0, 0.47), domain(0.53, 1.0)], [domain(1 - cut, 1.0), domain(0.0, cut)]
    domains = [(xs[c % 2], ys[c // 2]) for c in range(4)]
    notes = [dict(text=t, x=sum(x) / 2, y=y[1], xref="paper", yref="paper", xanchor="center", yanchor="bottom",
                  showarrow=False, font=dict(size=12)) for t, (x, y) in zip(PANELS, domains)]
    return domains, notes, height


def dependency_figure(norms, tokens: Sequence[str], *, title: str | None = None) -> go.Figure:
    """(T, T) Jacobian norms ||∂h_t/∂e_s||: rows = output position t, columns = input position s.

    Colour is each row's share (norm / row total) so every row reads on one scale; an exact zero is grey.
    """
    j = to_numpy(norms).astype(float)
    T = j.shape[0]
    labels = token_labels(tokens)
    share = j / np.maximum(j.sum(1, keepdims=True), 1e-30)
    zero = j == 0
    hover = [[f"output {labels[t]} ← input {labels[s]}: " + ("exactly 0 (no dependence)" if zero[t, s]
              else f"‖∂h/∂e‖ = {j[t, s]:.3g} ({share[t, s]:.0%} of the row)") for s in range(T)] for t in range(T)]
    idx = list(range(T))
    data = []
    if zero.any():
        data.append(dict(type="heatmap", z=np.where(zero, 1.0, np.nan), x=idx, y=idx, showscale=False,
                         name="exactly zero", colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], hovertext=hover,
                         hoverinfo="text"))
    data.append(dict(type="heatmap", z=np.where(zero, np.nan, share), x=idx, y=idx, colorscale=SEQUENTIAL, zmin=0,
                     name="dependence", hovertext=hover, hoverinfo="text", hoverongaps=False,
                     colorbar=dict(thickness=12, title=dict(text="share of row"))))
    return fast_figure(data, layout_dict(
        title, height=max(320, 130 + 28 * T), top=110 if title else 80, title_top=bool(title),
        xaxis=dict(tickmode="array", tickvals=idx, ticktext=labels, title=dict(text="input position s (embedding)"),
                   side="top", tickangle=-45),
        yaxis=dict(tickmode="array", tickvals=idx, ticktext=labels, title=dict(text="output position t"),
                   autorange="reversed")))


def row_sum_bars(sums_additive, sums_multiplied, tokens: Sequence[str]) -> go.Figure:
    """Measured row sums: additive −∞ mask (always 1) vs multiplying a 0/1 mask after softmax (< 1)."""
    a, m = to_numpy(sums_additive).astype(float), to_numpy(sums_multiplied).astype(float)
    labels = token_labels(tokens)
    ticks = list(range(len(a)))
    line, _ = hline(1.0, dict(dash="dot", color="grey"))
    return fast_figure([
        dict(type="bar", x=ticks, y=a, name="softmax(S + M), M = 0 / −∞",
             hovertext=[f"row {labels[i]}: sum {a[i]:.6f}" for i in range(len(a))], hoverinfo="text"),
        dict(type="bar", x=list(range(len(m))), y=m, name="softmax(S) × mask (0/1)",
             hovertext=[f"row {labels[i]}: sum {m[i]:.6f}" for i in range(len(m))], hoverinfo="text"),
    ], layout_dict("Row sums, measured", height=360, shapes=[line], barmode="group",
                   legend=dict(orientation="h", y=-0.35),
                   xaxis=dict(tickmode="array", tickvals=ticks, ticktext=labels, title=dict(text="query row"),
                              tickangle=-45),
                   yaxis=dict(title=dict(text="row sum"), range=[0, 1.15])))
