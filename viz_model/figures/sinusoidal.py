"""Figures of the Sinusoidal page: curves, slices, tables, the shift matrix and similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import (
    DIVERGING,
    axis,
    escape,
    fast_figure,
    layout_dict,
    ordinal,
    panel_row,
    to_numpy,
    vline,
)


def _curves(pe: np.ndarray, dims: Sequence[int]) -> list[dict]:
    """One line per dimension j of pe (n_pos, d): even dims are sines, odd ones cosines, pair j // 2."""
    x = np.arange(pe.shape[0])
    kind = ("sin", "cos")
    return [dict(type="scatter", x=x, y=pe[:, j], mode="lines", name=f"dim {j} ({kind[j % 2]}, pair {j // 2})",
                 hovertemplate=f"dim {j}<br>position %{{x}}<br>value %{{y:.4f}}<extra></extra>") for j in dims]


def _curves_layout(title: str | None, **extra) -> dict:
    return layout_dict(title, height=360, xaxis=axis("position p"), yaxis=axis("PE[p, dim]", range=[-1.1, 1.1]),
                       **extra)


def pe_curves(pe, dims: Sequence[int], title: str | None = None) -> go.Figure:
    """PE value vs position, one line per chosen dimension.  pe: (n_pos, d)."""
    return fast_figure(_curves(to_numpy(pe), dims), _curves_layout(title))


def pe_slices(pe, slice_positions: Sequence[int], title: str | None = None) -> go.Figure:
    """The lecture's small-d view: every dimension as a curve, vertical lines at chosen positions.

    pe: (n_pos, d) with a small d (4 in the lecture); markers show the values each slice reads off.
    """
    pe = to_numpy(pe)
    n, d = pe.shape
    marks = [dict(type="scatter", x=[p] * d, y=pe[p], mode="markers",
                  marker=dict(size=10, color="black", symbol="circle-open"), name=f"slice at p = {p}",
                  showlegend=False, hovertext=[f"P_{p}[{j}] = {pe[p, j]:.4f}" for j in range(d)], hoverinfo="text")
             for p in slice_positions]
    lines = [vline(p, dict(color="black", dash="dot", width=1)) for p in slice_positions]
    return fast_figure(_curves(pe, range(d)) + marks, _curves_layout(title, shapes=lines))


def pe_heatmap(pe, pos_idx=None, dim_idx=None, title: str | None = None, name: str = "PE") -> go.Figure:
    """Positions (rows) x dimensions (columns) on a diverging scale centred at 0."""
    pe = to_numpy(pe)
    pos_idx = np.arange(pe.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    dim_idx = np.arange(pe.shape[1]) if dim_idx is None else np.asarray(dim_idx)
    z = pe[np.ix_(pos_idx, dim_idx)]
    heat = dict(type="heatmap", z=z, x=dim_idx, y=pos_idx, colorscale=DIVERGING, zmid=0, name=name,
                hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.4f}<extra></extra>",
                colorbar=dict(thickness=12, title=dict(text="value", side="right")))
    return fast_figure([heat], layout_dict(title, height=420, xaxis=axis("dimension"),
                                           yaxis=axis("position", autorange="reversed")))


def bits_vs_signs(bits, signs, title: str | None = None) -> go.Figure:
    """Side by side: binary digits of the position index and the sign of the sin columns (1 = positive)."""
    bits, signs = to_numpy(bits), to_numpy(signs)
    n = bits.shape[0]
    domains, notes = panel_row(("bits of the position index (bit 0 = fastest)",
                                "sign of sin(p·ω_i) (pair 0 = fastest)"), 0.12)  # one row of two panels
    data, axes = [], {}
    for col, (z, label) in enumerate(((bits, "bit"), (signs, "pair")), start=1):
        a = "" if col == 1 else col  # Plotly names the first axes x / y, then x2 / y2
        data.append(dict(
            type="heatmap", z=z, x=np.arange(z.shape[1]), y=np.arange(n), zmin=0, zmax=1, showscale=False, name=label,
            colorscale=[[0, "#f1f1f1"], [1, "#2b6cb0"]], xgap=1, ygap=1,
            text=z.astype(str), texttemplate="%{text}" if n <= 32 else None, xaxis=f"x{a}", yaxis=f"y{a}",
            hovertemplate=f"position %{{y}}<br>{label} %{{x}}: %{{z}}<extra></extra>"))
        axes[f"xaxis{a}"] = axis(label, anchor=f"y{a}", domain=domains[col - 1], dtick=1)
        axes[f"yaxis{a}"] = axis("position", anchor=f"x{a}", domain=[0.0, 1.0], autorange="reversed",
                                  dtick=1 if n <= 32 else None)
    return fast_figure(data, layout_dict(title, height=max(320, 60 + 18 * n), annotations=notes, **axes))


def matrix_heatmap(m, title: str | None = None, name: str = "M_k", label: str = "row / column") -> go.Figure:
    """A small square matrix (the shift matrix M_k) with values printed when it fits."""
    m = to_numpy(m)
    n = m.shape[0]
    heat = dict(type="heatmap", z=m, x=np.arange(n), y=np.arange(n), colorscale=DIVERGING, zmid=0, zmin=-1, zmax=1,
                name=name, text=np.round(m, 2).astype(str), texttemplate="%{text}" if n <= 12 else None,
                hovertemplate=f"{escape(name)}[%{{y}}, %{{x}}] = %{{z:.4f}}<extra></extra>",
                colorbar=dict(thickness=12))
    dtick = 1 if n <= 12 else None
    return fast_figure([heat], layout_dict(
        title, height=420, xaxis=axis(label, dtick=dtick, constrain="domain"),
        yaxis=axis(label, autorange="reversed", dtick=dtick, scaleanchor="x", constrain="domain")))


def shift_errors(table, title: str | None = None) -> go.Figure:
    """Bar per t of max |M_k P_t - P_{t+k}| (log scale; zero errors sit on the axis)."""
    t = [str(v) for v in table["t"]]
    err = np.asarray(table.iloc[:, -1], dtype=float)
    bars = dict(type="bar", x=t, y=np.maximum(err, 1e-18), name="error",
                hovertemplate="t = %{x}<br>max error %{y:.1e}<extra></extra>")
    return fast_figure([bars], layout_dict(
        title, height=300, xaxis=axis("t (the same M_k for all)", type="category"),
        yaxis=axis("max |M_k·P_t − P_{t+k}|", type="log", range=[-18, 0])))


def similarity_heatmap(sim, pos_idx=None, title: str | None = None, name: str = "similarity",
                       diverging: bool = True, labels=None) -> go.Figure:
    """P·Pᵀ (or cosine similarity) of positions, rows and columns on the same position axis.

    pos_idx picks rows/columns of `sim`; `labels` gives the true positions of an already-picked `sim`.
    """
    sim = to_numpy(sim)
    idx = np.arange(sim.shape[0]) if pos_idx is None else np.asarray(pos_idx)
    z = sim[np.ix_(idx, idx)]
    positions = idx if labels is None else np.asarray(labels)
    heat = dict(type="heatmap", z=z, x=positions, y=positions, colorscale=DIVERGING, zmid=0 if diverging else None,
                name=name,
                hovertemplate=f"positions %{{y}} · %{{x}}<br>{escape(name)} %{{z:.3f}}<extra></extra>",
                colorbar=dict(thickness=12))
    return fast_figure([heat], layout_dict(
        title, height=420, xaxis=axis("position", constrain="domain"),
        yaxis=axis("position", autorange="reversed", scaleanchor="x", constrain="domain")))


def dot_vs_offset(curves: dict[str, np.ndarray], title: str | None = None) -> go.Figure:
    """P_t · P_{t+k} against the offset k, one line per starting t (they coincide: only k matters)."""
    data = []
    for i, (label, y) in enumerate(curves.items()):
        y = to_numpy(y)
        data.append(dict(type="scatter", x=np.arange(len(y)), y=y, mode="lines", name=escape(label),
                         line=dict(dash="dash" if i else "solid", width=3 if i == 0 else 2),
                         hovertemplate="offset k = %{x}<br>dot %{y:.3f}<extra></extra>"))
    return fast_figure(data, layout_dict(title, height=320, xaxis=axis("offset k"), yaxis=axis("P_t · P_{t+k}")))


def vector_rows(rows: dict[str, np.ndarray], dims=None, title: str | None = None) -> go.Figure:
    """Several vectors of the same width as heatmap rows (e.g. embedding, PE rows, their sums)."""
    names = list(rows)
    z = np.stack([to_numpy(rows[n]) for n in names])
    dims = np.arange(z.shape[1]) if dims is None else np.asarray(dims)
    z = z[:, dims]
    heat = dict(type="heatmap", z=z, x=dims, y=np.arange(len(names)), colorscale=DIVERGING, zmid=0, name="vectors",
                customdata=np.array([[n] * len(dims) for n in names]),
                hovertemplate="%{customdata}<br>dimension %{x}: %{z:.3f}<extra></extra>", colorbar=dict(thickness=12))
    return fast_figure([heat], layout_dict(
        title, height=120 + 36 * len(names), xaxis=axis("dimension"),
        yaxis=dict(tickmode="array", tickvals=list(range(len(names))), ticktext=[escape(n) for n in names],
                   autorange="reversed")))


def every_nth(n: int, shown: int, what: str) -> str | None:
    """"every 32nd position" when `shown` evenly spaced ones of `n` are drawn (lessons.common.decimate), "about"
    when the spacing is not a whole number; None when all are drawn."""
    if shown >= n:
        return None
    step = (n - 1) / max(shown - 1, 1)
    if round(step) < 2:  # "about every 1st" says nothing
        return f"{shown:,} of {n:,} {what}s"
    return f"{'' if step == round(step) else 'about '}every {ordinal(round(step))} {what}"


def table_heatmap(pe, pos_idx: Sequence[int], dim_idx: Sequence[int]) -> go.Figure:
    """pe_heatmap of the whole (n_pos, d) table at pos_idx x dim_idx, its title saying which ones it shows."""
    n_pos, d = pe.shape
    parts = [s for s in (every_nth(n_pos, len(pos_idx), "position"), every_nth(d, len(dim_idx), "dimension")) if s]
    note = f" ({' and '.join(parts)} shown)" if parts else ""
    return pe_heatmap(pe, pos_idx, dim_idx, f"The PE table: {n_pos} positions × {d} dimensions{note}")


def shift_figures(check, matrix, title: str) -> tuple[go.Figure, go.Figure]:
    """The shift matrix M_k (its shown corner, `matrix`) and the errors of its check table, one bar per t."""
    return matrix_heatmap(matrix, title), shift_errors(check, "Same M_k, every t")
