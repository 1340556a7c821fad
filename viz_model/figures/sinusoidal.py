"""Figures of the Sinusoidal page: curves, slices, tables, the shift matrix and similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_model.figures.common import DIVERGING, base_layout, escape, to_numpy


def pe_curves(pe, dims: Sequence[int], title: str | None = None) -> go.Figure:
    """PE value vs position, one line per chosen dimension.  pe: (n_pos, d)."""
    pe = to_numpy(pe)
    x = np.arange(pe.shape[0])
    fig = go.Figure()
    for j in dims:
        kind = "sin" if j % 2 == 0 else "cos"
        fig.add_trace(go.Scatter(x=x, y=pe[:, j], mode="lines", name=f"dim {j} ({kind}, pair {j // 2})",
                                 hovertemplate=f"dim {j}<br>position %{{x}}<br>value %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(title="position p")
    fig.update_yaxes(title="PE[p, dim]", range=[-1.1, 1.1])
    return base_layout(fig, title, height=360)


def pe_slices(pe, slice_positions: Sequence[int], title: str | None = None) -> go.Figure:
    """The lecture's small-d view: every dimension as a curve, vertical lines at chosen positions.

    pe: (n_pos, d) with a small d (4 in the lecture); markers show the values each slice reads off.
    """
    pe = to_numpy(pe)
    n, d = pe.shape
    fig = pe_curves(pe, range(d))
    for p in slice_positions:
        fig.add_vline(x=p, line=dict(color="black", dash="dot", width=1))
        fig.add_trace(go.Scatter(
            x=[p] * d, y=pe[p], mode="markers", marker=dict(size=10, color="black", symbol="circle-open"),
            name=f"slice at p = {p}", showlegend=False,
            hovertext=[f"P_{p}[{j}] = {pe[p, j]:.4f}" for j in range(d)], hoverinfo="text"))
    return base_layout(fig, title, height=360)


def pe_heatmap(pe, pos_idx=None, dim_idx=None, title: str | None = None, name: str = "PE") -> go.Figure:
    """Positions (rows) x dimensions (columns) on a diverging scale centred at 0."""
    pe = to_numpy(pe)
    pos_idx = np.arange(pe.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    dim_idx = np.arange(pe.shape[1]) if dim_idx is None else np.asarray(dim_idx)
    z = pe[np.ix_(pos_idx, dim_idx)]
    fig = go.Figure(go.Heatmap(
        z=z, x=dim_idx, y=pos_idx, colorscale=DIVERGING, zmid=0, name=name,
        hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.4f}<extra></extra>",
        colorbar=dict(thickness=12, title=dict(text="value", side="right"))))
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(title="position", autorange="reversed")
    return base_layout(fig, title, height=420)


def bits_vs_signs(bits, signs, title: str | None = None) -> go.Figure:
    """Side by side: binary digits of the position index and the sign of the sin columns (1 = positive)."""
    bits, signs = to_numpy(bits), to_numpy(signs)
    n = bits.shape[0]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("bits of the position index (bit 0 = fastest)",
                                        "sign of sin(p·ω_i) (pair 0 = fastest)"))
    for col, (z, label) in enumerate(((bits, "bit"), (signs, "pair")), start=1):
        fig.add_trace(go.Heatmap(
            z=z, x=np.arange(z.shape[1]), y=np.arange(n), zmin=0, zmax=1, showscale=False, name=label,
            colorscale=[[0, "#f1f1f1"], [1, "#2b6cb0"]], xgap=1, ygap=1,
            text=z.astype(str), texttemplate="%{text}" if n <= 32 else None,
            hovertemplate=f"position %{{y}}<br>{label} %{{x}}: %{{z}}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title=label, dtick=1, row=1, col=col)
    fig.update_yaxes(title="position", autorange="reversed", dtick=1 if n <= 32 else None)
    return base_layout(fig, title, height=max(320, 60 + 18 * n))


def matrix_heatmap(m, title: str | None = None, name: str = "M_k", label: str = "row / column") -> go.Figure:
    """A small square matrix (the shift matrix M_k) with values printed when it fits."""
    m = to_numpy(m)
    n = m.shape[0]
    fig = go.Figure(go.Heatmap(
        z=m, x=np.arange(n), y=np.arange(n), colorscale=DIVERGING, zmid=0, zmin=-1, zmax=1, name=name,
        text=np.round(m, 2).astype(str), texttemplate="%{text}" if n <= 12 else None,
        hovertemplate=f"{escape(name)}[%{{y}}, %{{x}}] = %{{z:.4f}}<extra></extra>",
        colorbar=dict(thickness=12)))
    fig.update_xaxes(title=label, dtick=1 if n <= 12 else None)
    fig.update_yaxes(title=label, autorange="reversed", dtick=1 if n <= 12 else None)
    fig.update_layout(yaxis_scaleanchor="x", xaxis_constrain="domain", yaxis_constrain="domain")
    return base_layout(fig, title, height=420)


def shift_errors(table, title: str | None = None) -> go.Figure:
    """Bar per t of max |M_k P_t - P_{t+k}| (log scale; zero errors sit on the axis)."""
    t = [str(v) for v in table["t"]]
    err = np.asarray(table.iloc[:, -1], dtype=float)
    fig = go.Figure(go.Bar(x=t, y=np.maximum(err, 1e-18), name="error",
                           hovertemplate="t = %{x}<br>max error %{y:.1e}<extra></extra>"))
    fig.update_xaxes(title="t (the same M_k for all)", type="category")
    fig.update_yaxes(title="max |M_k·P_t − P_{t+k}|", type="log", range=[-18, 0])
    return base_layout(fig, title, height=300)


def similarity_heatmap(sim, pos_idx=None, title: str | None = None, name: str = "similarity",
                       diverging: bool = True, labels=None) -> go.Figure:
    """P·Pᵀ (or cosine similarity) of positions, rows and columns on the same position axis.

    pos_idx picks rows/columns of `sim`; `labels` gives the true positions of an already-picked `sim`.
    """
    sim = to_numpy(sim)
    idx = np.arange(sim.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    z = sim[np.ix_(idx, idx)]
    axis = idx if labels is None else np.asarray(labels)
    fig = go.Figure(go.Heatmap(
        z=z, x=axis, y=axis, colorscale=DIVERGING, zmid=0 if diverging else None, name=name,
        hovertemplate=f"positions %{{y}} · %{{x}}<br>{escape(name)} %{{z:.3f}}<extra></extra>",
        colorbar=dict(thickness=12)))
    fig.update_xaxes(title="position")
    fig.update_yaxes(title="position", autorange="reversed")
    fig.update_layout(yaxis_scaleanchor="x", xaxis_constrain="domain", yaxis_constrain="domain")
    return base_layout(fig, title, height=420)


def dot_vs_offset(curves: dict[str, np.ndarray], title: str | None = None) -> go.Figure:
    """P_t · P_{t+k} against the offset k, one line per starting t (they coincide: only k matters)."""
    fig = go.Figure()
    for i, (label, y) in enumerate(curves.items()):
        y = to_numpy(y)
        fig.add_trace(go.Scatter(x=np.arange(len(y)), y=y, mode="lines", name=escape(label),
                                 line=dict(dash="dash" if i else "solid", width=3 if i == 0 else 2),
                                 hovertemplate="offset k = %{x}<br>dot %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title="offset k")
    fig.update_yaxes(title="P_t · P_{t+k}")
    return base_layout(fig, title, height=320)


def vector_rows(rows: dict[str, np.ndarray], dims=None, title: str | None = None) -> go.Figure:
    """Several vectors of the same width as heatmap rows (e.g. embedding, PE rows, their sums)."""
    names = list(rows)
    z = np.stack([to_numpy(rows[n]) for n in names])
    dims = np.arange(z.shape[1]) if dims is None else np.asarray(dims)
    z = z[:, dims]
    fig = go.Figure(go.Heatmap(
        z=z, x=dims, y=np.arange(len(names)), colorscale=DIVERGING, zmid=0, name="vectors",
        customdata=np.array([[n] * len(dims) for n in names]),
        hovertemplate="%{customdata}<br>dimension %{x}: %{z:.3f}<extra></extra>", colorbar=dict(thickness=12)))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=[escape(n) for n in names],
                     autorange="reversed")
    fig.update_xaxes(title="dimension")
    return base_layout(fig, title, height=120 + 36 * len(names))
