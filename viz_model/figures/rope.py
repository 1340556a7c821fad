"""Figures for the RoPE page: pair rotations, angle tables, wavelengths, scalings and their effects."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_model.figures.common import CYCLIC, base_layout, escape, to_numpy

Q_COLOR, K_COLOR = "#2b6cb0", "#c05621"


def pair_arrows(vectors: dict[str, Sequence[float]], title: str | None = None) -> go.Figure:
    """2-D arrows from the origin, one per named pair (a, b); names starting 'q' blue, 'k' orange."""
    fig = go.Figure()
    r = max(1e-9, max(math.hypot(*map(float, v)) for v in vectors.values()))
    for name, (a, b) in vectors.items():
        color = Q_COLOR if name.startswith("q") else K_COLOR
        faded = "before" in name
        fig.add_trace(go.Scatter(
            x=[0, a], y=[0, b], mode="lines+markers", name=escape(name),
            line=dict(color=color, width=2 if faded else 4, dash="dot" if faded else "solid"),
            marker=dict(size=[0, 12], symbol="arrow", angleref="previous", color=color),
            hovertemplate=f"{escape(name)}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
    lim = 1.15 * r
    fig.update_xaxes(range=[-lim, lim], title="first dim of the pair", zeroline=True, constrain="domain")
    fig.update_yaxes(range=[-lim, lim], title="second dim of the pair", zeroline=True, scaleanchor="x")
    return base_layout(fig, title, height=420)


def angle_heatmap(angles, pos_idx=None, title: str | None = None) -> go.Figure:
    """Positions x pairs of t*theta_i mod 2 pi on a cyclic scale (0 and 2 pi share a colour)."""
    a = to_numpy(angles)
    idx = np.arange(a.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    fig = go.Figure(go.Heatmap(
        z=a[idx], x=np.arange(a.shape[1]), y=idx, colorscale=CYCLIC, zmin=0, zmax=2 * math.pi, name="angle",
        hovertemplate="position %{y}<br>pair %{x}<br>angle %{z:.3f} rad (mod 2π)<extra></extra>",
        colorbar=dict(thickness=12, title=dict(text="rad", side="right"),
                      tickvals=[0, math.pi / 2, math.pi, 3 * math.pi / 2, 2 * math.pi],
                      ticktext=["0", "π/2", "π", "3π/2", "2π"])))
    fig.update_xaxes(title="pair i (fast → slow)")
    fig.update_yaxes(title="position t", autorange="reversed")
    return base_layout(fig, title, height=440)


def wavelength_bars(wavelengths, context: int, title: str | None = None) -> go.Figure:
    """Tokens per full turn of each pair (log scale) against the context length; wrapping pairs marked."""
    wl = to_numpy(wavelengths).astype(float)
    wraps = wl <= context
    fig = go.Figure()
    for mask, name, color in ((wraps, "wraps inside the context", "#c53030"),
                              (~wraps, "never completes a turn", "#718096")):
        i = np.flatnonzero(mask)
        fig.add_trace(go.Bar(x=i, y=wl[i], name=name, marker_color=color,
                             hovertemplate="pair %{x}<br>wavelength %{y:,.1f} tokens<extra></extra>"))
    fig.add_hline(y=context, line=dict(color="black", dash="dash"),
                  annotation_text=f"context {context:,}", annotation_position="top left")
    fig.update_xaxes(title="pair i")
    fig.update_yaxes(title="wavelength 2π/θ_i (tokens)", type="log")
    fig.update_layout(barmode="overlay", legend=dict(orientation="h", y=-0.25))
    return base_layout(fig, title, height=440)


def scores_vs_distance(curves: dict[str, np.ndarray], title: str | None = None,
                       y_title: str = "score <R_0 q, R_Δ k>") -> go.Figure:
    """Score against relative distance Δ, one line per curve."""
    fig = go.Figure()
    for name, y in curves.items():
        y = to_numpy(y)
        fig.add_trace(go.Scatter(x=np.arange(len(y)), y=y, mode="lines", name=escape(name),
                                 hovertemplate=f"{escape(name)}<br>Δ = %{{x}}<br>%{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(title="relative distance Δ = s − t")
    fig.update_yaxes(title=y_title)
    return base_layout(fig, title, height=360)


def frequency_ratios(ratios: dict[str, np.ndarray], labels: dict[str, str], chosen: str,
                     title: str | None = None) -> go.Figure:
    """θ′/θ per pair for every scaling method (log scale); the chosen one drawn bold."""
    fig = go.Figure()
    for method, r in ratios.items():
        r = to_numpy(r)
        bold = method == chosen
        fig.add_trace(go.Scatter(
            x=np.arange(len(r)), y=r, mode="lines+markers" if bold else "lines", name=escape(labels[method]),
            line=dict(width=4 if bold else 1.5), opacity=1 if bold else 0.55,
            hovertemplate=f"{escape(labels[method])}<br>pair %{{x}}<br>θ′/θ = %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(title="pair i (fast → slow)")
    fig.update_yaxes(title="θ′ / θ", type="log")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return base_layout(fig, title, height=420)


def angle_coverage(seen, needed, title: str | None = None) -> go.Figure:
    """Per pair: angles training saw (grey) and those the target length needs beyond them (red shading)."""
    seen, needed = to_numpy(seen), to_numpy(needed)
    i = np.arange(len(seen))
    beyond = np.maximum(needed - seen, 0)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=i, y=np.minimum(seen, needed), name="angles seen in training", marker_color="#a0aec0",
                         hovertemplate="pair %{x}<br>seen up to %{y:.3f} rad<extra></extra>"))
    fig.add_trace(go.Bar(x=i, y=beyond, name="needed at L′, never seen in training", marker_color="#e53e3e",
                         hovertemplate="pair %{x}<br>%{y:.3f} rad beyond training<extra></extra>"))
    fig.add_hline(y=2 * math.pi, line=dict(color="black", dash="dot"), annotation_text="one full turn (2π)")
    fig.update_xaxes(title="pair i")
    fig.update_yaxes(title="largest angle (rad, capped at 2π)", range=[0, 2 * math.pi * 1.08])
    fig.update_layout(barmode="stack", legend=dict(orientation="h", y=-0.25))
    return base_layout(fig, title, height=420)


def length_losses(table: pd.DataFrame, labels: dict[str, str], title: str | None = None) -> go.Figure:
    """Held-out loss against context length, one line per (model, method)."""
    fig = go.Figure()
    for (model, method), g in table.groupby(["model", "method"], sort=False):
        g = g.dropna(subset=["loss"])
        if g.empty:
            continue
        name = f"{model}: {labels.get(method, method)}" if method != "none" else f"{model}"
        fig.add_trace(go.Scatter(x=g["length"], y=g["loss"], mode="lines+markers", name=escape(name),
                                 hovertemplate=f"{escape(name)}<br>length %{{x}}<br>loss %{{y:.3f}}<extra></extra>"))
    lengths = sorted({int(v) for v in table["length"].dropna()})
    fig.update_xaxes(title="context length (tokens)", type="log", tickvals=lengths, ticktext=[str(v) for v in lengths])
    fig.update_yaxes(title="held-out loss (nats / token)")
    return base_layout(fig, title, height=420)
