"""Figures for the RoPE page: pair rotations, angle tables, wavelengths, scalings and their effects."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_model.figures.common import CYCLIC, axis, escape, fast_figure, hline, layout_dict, to_numpy

Q_COLOR, K_COLOR = "#2b6cb0", "#c05621"


def pair_arrows(vectors: dict[str, Sequence[float]], title: str | None = None) -> go.Figure:
    """2-D arrows from the origin, one per named pair (a, b); names starting 'q' blue, 'k' orange."""
    data = []
    r = max(1e-9, max(math.hypot(*map(float, v)) for v in vectors.values()))
    for name, (a, b) in vectors.items():
        color = Q_COLOR if name.startswith("q") else K_COLOR
        faded = "before" in name
        data.append(dict(
            type="scatter", x=[0, a], y=[0, b], mode="lines+markers", name=escape(name),
            line=dict(color=color, width=2 if faded else 4, dash="dot" if faded else "solid"),
            marker=dict(size=[0, 12], symbol="arrow", angleref="previous", color=color),
            hovertemplate=f"{escape(name)}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
    lim = 1.15 * r
    return fast_figure(data, layout_dict(
        title, height=420,
        xaxis=axis("first dim of the pair", range=[-lim, lim], zeroline=True, constrain="domain"),
        yaxis=axis("second dim of the pair", range=[-lim, lim], zeroline=True, scaleanchor="x")))


def angle_heatmap(angles, pos_idx=None, title: str | None = None) -> go.Figure:
    """Positions x pairs of t*theta_i mod 2 pi on a cyclic scale (0 and 2 pi share a colour)."""
    a = to_numpy(angles)
    idx = np.arange(a.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    heat = dict(
        type="heatmap", z=a[idx], x=np.arange(a.shape[1]), y=idx, colorscale=CYCLIC, zmin=0, zmax=2 * math.pi,
        name="angle", hovertemplate="position %{y}<br>pair %{x}<br>angle %{z:.3f} rad (mod 2π)<extra></extra>",
        colorbar=dict(thickness=12, title=dict(text="rad", side="right"),
                      tickvals=[0, math.pi / 2, math.pi, 3 * math.pi / 2, 2 * math.pi],
                      ticktext=["0", "π/2", "π", "3π/2", "2π"]))
    return fast_figure([heat], layout_dict(title, height=440, xaxis=axis("pair i (fast → slow)"),
                                           yaxis=axis("position t", autorange="reversed")))


def wavelength_bars(wavelengths, context: int, title: str | None = None) -> go.Figure:
    """Tokens per full turn of each pair (log scale) against the context length; wrapping pairs marked."""
    wl = to_numpy(wavelengths).astype(float)
    wraps = wl <= context
    data = []
    for mask, name, color in ((wraps, "wraps inside the context", "#c53030"),
                              (~wraps, "never completes a turn", "#718096")):
        i = np.flatnonzero(mask)
        data.append(dict(type="bar", x=i, y=wl[i], name=name, marker=dict(color=color),
                         hovertemplate="pair %{x}<br>wavelength %{y:,.1f} tokens<extra></extra>"))
    line, label = hline(context, dict(color="black", dash="dash"), f"context {context:,}", "top left")
    return fast_figure(data, layout_dict(
        title, height=440, shapes=[line], annotations=label, barmode="overlay", legend=dict(orientation="h", y=-0.25),
        xaxis=axis("pair i"), yaxis=axis("wavelength 2π/θ_i (tokens)", type="log")))


def scores_vs_distance(curves: dict[str, np.ndarray], title: str | None = None,
                       y_title: str = "score <R_0 q, R_Δ k>") -> go.Figure:
    """Score against relative distance Δ, one line per curve."""
    data = []
    for name, y in curves.items():
        y = to_numpy(y)
        data.append(dict(type="scatter", x=np.arange(len(y)), y=y, mode="lines", name=escape(name),
                         hovertemplate=f"{escape(name)}<br>Δ = %{{x}}<br>%{{y:.3f}}<extra></extra>"))
    # the legend below the plot: beside it, its long names left a phone's plot a third of the width (#42, item 4)
    return fast_figure(data, layout_dict(title, height=400, xaxis=axis("relative distance Δ = s − t"),
                                         yaxis=axis(y_title), legend=dict(orientation="h", yanchor="top", y=-0.22,
                                                                          x=0, font=dict(size=12))))


def frequency_ratios(ratios: dict[str, np.ndarray], labels: dict[str, str], chosen: str,
                     title: str | None = None) -> go.Figure:
    """θ′/θ per pair for every scaling method (log scale); the chosen one drawn bold."""
    data = []
    for method, r in ratios.items():
        r = to_numpy(r)
        bold = method == chosen
        data.append(dict(
            type="scatter", x=np.arange(len(r)), y=r, mode="lines+markers" if bold else "lines",
            name=escape(labels[method]), line=dict(width=4 if bold else 1.5), opacity=1 if bold else 0.55,
            hovertemplate=f"{escape(labels[method])}<br>pair %{{x}}<br>θ′/θ = %{{y:.4f}}<extra></extra>"))
    values = np.concatenate([to_numpy(r).ravel() for r in ratios.values()]) if ratios else np.ones(1)
    return fast_figure(data, layout_dict(title, height=420, legend=dict(orientation="h", y=-0.25),
                                         xaxis=axis("pair i (fast → slow)"),
                                         yaxis=axis("θ′ / θ", type="log", **power_of_two_ticks(values))))


def power_of_two_ticks(values, most: int = 7) -> dict:
    """Log-axis ticks at powers of two, written 1/8, 1/4, 1/2, 1, 2 (at most `most`, every other one past that):
    Plotly's own log ticks over less than a decade print a digit at every minor step, and they pile up."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = (np.log2(v.min()), np.log2(v.max())) if len(v) else (0.0, 0.0)
    exps = list(range(math.floor(lo + 1e-6), math.ceil(hi - 1e-6) + 1))
    if len(exps) < 2:
        exps = [exps[0] - 1, exps[0], exps[0] + 1]
    step = math.ceil(len(exps) / most)
    exps = [e for e in exps if (e - exps[-1]) % step == 0]  # keep the top one (1 for ratios that only shrink)
    return dict(tickmode="array", tickvals=[2.0 ** e for e in exps],
                ticktext=[f"1/{2 ** -e:,}" if e < 0 else f"{2 ** e:,}" for e in exps])


def angle_coverage(seen, needed, title: str | None = None) -> go.Figure:
    """Per pair: angles training saw (grey) and those the target length needs beyond them (red shading)."""
    seen, needed = to_numpy(seen), to_numpy(needed)
    i = np.arange(len(seen))
    beyond = np.maximum(needed - seen, 0)
    data = [dict(type="bar", x=i, y=np.minimum(seen, needed), name="angles seen in training",
                 marker=dict(color="#a0aec0"), hovertemplate="pair %{x}<br>seen up to %{y:.3f} rad<extra></extra>"),
            dict(type="bar", x=i, y=beyond, name="needed at L′, never seen in training", marker=dict(color="#e53e3e"),
                 hovertemplate="pair %{x}<br>%{y:.3f} rad beyond training<extra></extra>")]
    line, label = hline(2 * math.pi, dict(color="black", dash="dot"), "one full turn (2π)")
    return fast_figure(data, layout_dict(
        title, height=420, shapes=[line], annotations=label, barmode="stack", legend=dict(orientation="h", y=-0.25),
        xaxis=axis("pair i"), yaxis=axis("largest angle (rad, capped at 2π)", range=[0, 2 * math.pi * 1.08])))


def length_losses(table: pd.DataFrame, labels: dict[str, str], title: str | None = None) -> go.Figure:
    """Held-out loss against context length, one line per (model, method)."""
    data = []
    for (model, method), g in table.groupby(["model", "method"], sort=False):
        g = g.dropna(subset=["loss"])
        if g.empty:
            continue
        name = f"{model}: {labels.get(method, method)}" if method != "none" else f"{model}"
        data.append(dict(type="scatter", x=g["length"].to_numpy(), y=g["loss"].to_numpy(), mode="lines+markers",
                         name=escape(name),
                         hovertemplate=f"{escape(name)}<br>length %{{x}}<br>loss %{{y:.3f}}<extra></extra>"))
    lengths = sorted({int(v) for v in table["length"].dropna()})
    return fast_figure(data, layout_dict(
        title, height=420, yaxis=axis("held-out loss (nats / token)"),
        xaxis=axis("context length (tokens)", type="log", tickvals=lengths, ticktext=[str(v) for v in lengths])))
