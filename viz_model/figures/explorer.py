"""Figures of the Explorer: one head's pipeline matrices, query focus, value mixing, row entropy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.attention import value_mix  # noqa: F401 (shared with Q, K and V; its old home was here)
from viz_model.figures.common import (
    DIVERGING,
    MASKED_COLOR,
    SEQUENTIAL,
    allowed_cells,
    category_axis,
    escape,
    fast_figure,
    layout_dict,
    masked_trace,
    to_numpy,
    token_labels,
    visible,
)


def matrix_heatmap(
    values,                               # (R, C) any real matrix; -inf / masked cells allowed
    row_tokens: Sequence[str],
    col_labels: Sequence[str] | None = None,  # None: feature columns "0..C-1"
    *,
    col_tokens: bool = False,             # True: col_labels are tokens (escaped, numbered)
    allowed=None,                         # (R, C) bool: False cells are drawn grey with "−∞"
    title: str | None = None,
    value_name: str = "value",
    row_title: str = "query token",
    col_title: str = "feature",
    diverging: bool = True,
    show_values: bool | None = None,      # default: print values when R, C <= 16
    tick_every: int | None = None,        # label every n-th column (default: 8 past 16 feature columns)
) -> go.Figure:
    """A labelled heatmap for Q, K, V (T x d_k), scores (T x T) and the like; hover names row, column, value.
    Past 16 feature columns only every 8th is labelled (32 or 128 labels side by side run into each other); the
    hover still names every column."""
    m = to_numpy(values).astype(float)
    R, C = m.shape
    if len(row_tokens) != R:
        raise ValueError(f"matrix has {R} rows but {len(row_tokens)} row labels were given.")
    finite = np.isfinite(m)
    ok = finite if allowed is None else (to_numpy(allowed).astype(bool) & finite)
    rows = token_labels(row_tokens)
    if col_labels is None:
        cols = [str(j) for j in range(C)]
    else:
        cols = token_labels(col_labels) if col_tokens else [escape(c) for c in col_labels]
    if len(cols) != C:
        raise ValueError(f"matrix has {C} columns but {len(cols)} column labels were given.")
    show_values = max(R, C) <= 16 if show_values is None else show_values
    where = f"{escape(row_title)} %{{y}} · {escape(col_title)} %{{x}}: "  # axis labels: no R x C hover strings
    z = np.where(ok, m, np.nan).astype(np.float32)
    bound = float(np.nanmax(np.abs(z))) if ok.any() else 1.0
    traces = []
    if not ok.all():  # grey underlay for blocked (−∞) cells
        traces.append(masked_trace(ok, cols, rows, mark="−∞" if show_values else None, hoverongaps=False,
                                   hovertemplate=where + "−∞<extra></extra>"))
    traces.append(dict(type="heatmap",
        z=z, x=cols, y=rows, name=value_name, hoverongaps=False, hovertemplate=where + "%{z:.3g}<extra></extra>",
        colorscale=DIVERGING if diverging else SEQUENTIAL,
        zmin=-bound if diverging else None, zmax=bound if diverging else None,
        text=np.where(ok, np.char.mod("%.2f", np.where(ok, m, 0.0)), "") if show_values else None,
        texttemplate="%{text}" if show_values else None,
        colorbar=dict(title=dict(text=escape(value_name), side="right"), thickness=12),
    ))
    return fast_figure(traces, layout_dict(
        title, height=max(300, 120 + 26 * R), top=110 if title else 80, title_top=bool(title),
        xaxis={**category_axis(cols, col_title, side="top", tickangle=-45 if col_tokens else 0),
               **_every(cols, tick_every or (FEATURE_TICK_EVERY if C > 16 and not col_tokens else 1))},
        yaxis=category_axis(rows, row_title, autorange="reversed")))


MASK_LEVELS = ("0 (allowed)", "−∞ (masked)")


def additive_mask_heatmap(allowed, tokens: Sequence[str], *, title: str | None = None) -> go.Figure:
    """The additive mask M (T x T): only two values, 0 where a query may read a key and −∞ where it may not, so two
    colours with a two-entry colour bar instead of a continuous scale (there is nothing in between)."""
    ok = to_numpy(allowed).astype(bool)
    T = ok.shape[0]
    if ok.shape != (T, T) or len(tokens) != T:
        raise ValueError(f"the mask must be square with one row per token; got {ok.shape} for {len(tokens)} tokens.")
    labels = token_labels(tokens)
    show_values = T <= 16
    levels = np.where(ok, MASK_LEVELS[0], MASK_LEVELS[1])
    heat = dict(
        type="heatmap", z=(~ok).astype(np.uint8), x=labels, y=labels, name="M", zmin=0, zmax=1, xgap=1, ygap=1,
        colorscale=[[0, "#ffffff"], [0.5, "#ffffff"], [0.5, MASKED_COLOR], [1, MASKED_COLOR]],
        customdata=levels, hovertemplate="query %{y} · key %{x}: %{customdata}<extra></extra>",
        text=np.where(ok, "0", "−∞") if show_values else None, texttemplate="%{text}" if show_values else None,
        colorbar=dict(title=dict(text="M", side="right"), thickness=12, tickmode="array", tickvals=[0.25, 0.75],
                      ticktext=list(MASK_LEVELS), outlinewidth=1, outlinecolor="#999999"))
    return fast_figure([heat], layout_dict(
        title, height=max(300, 120 + 26 * T), top=110 if title else 80, title_top=bool(title),
        plot_bgcolor="#999999",  # the gaps between cells: white "0" cells stay visible
        xaxis=category_axis(labels, "key", side="top", tickangle=-45),
        yaxis=category_axis(labels, "query token", autorange="reversed")))


FEATURE_TICK_EVERY = 8  # a wide feature axis (d_k 32, the concat's 128) labels columns 0, 8, 16, ...


def _every(cols: list[str], n: int) -> dict:
    """Tick values and texts of a categorical axis at every n-th column only."""
    return dict(tickvals=cols[::n], ticktext=cols[::n])


def query_bars(weights, k_tokens: Sequence[str], query_token: str, *, allowed=None) -> go.Figure:
    """One query's attention over the keys as bars; masked keys are listed but drawn as 'masked'."""
    w = to_numpy(weights).astype(float)
    ok = allowed_cells(allowed, w.shape)
    labels = token_labels(k_tokens)
    q = escape(visible(query_token))
    hover = [f"query '{q}' → key {labels[j]}: " + (f"{w[j]:.3f}" if ok[j] else "masked (−∞)") for j in range(len(w))]
    ticks = list(range(len(w)))
    return fast_figure([dict(
        type="bar", x=ticks, y=np.where(ok, w, 0.0), name="attention",
        marker=dict(color=np.where(ok, "#3b6fb6", MASKED_COLOR).tolist()),
        text=[f"{x:.2f}" if o else "masked" for x, o in zip(w, ok)], textposition="outside",
        hovertext=hover, hoverinfo="text",
    )], layout_dict(f"Where '{q}' looks", height=340, yaxis=dict(title=dict(text="attention weight"), range=[0, 1.1]),
                    xaxis=dict(tickmode="array", tickvals=ticks, ticktext=labels, title=dict(text="key"),
                               tickangle=-45)))


def entropy_bars(entropy, tokens: Sequence[str], *, max_entropy=None, title: str | None = None) -> go.Figure:
    """Row entropy per query (nats): 0 = all weight on one key (saturated); ln(#keys) = uniform."""
    e = to_numpy(entropy).astype(float)
    labels = token_labels(tokens)
    traces = [dict(type="bar", x=list(range(len(e))), y=e, name="entropy", marker=dict(color="#3b6fb6"),
                   hovertext=[f"query {labels[i]}: entropy {e[i]:.3f} nats" for i in range(len(e))],
                   hoverinfo="text")]
    if max_entropy is not None:
        m = to_numpy(max_entropy).astype(float)
        traces.append(dict(type="scatter", x=list(range(len(m))), y=m, mode="lines+markers", hoverinfo="skip",
                           name="uniform (ln #keys)", line=dict(dash="dot", color="grey")))
    return fast_figure(traces, layout_dict(
        title or "How spread out each row is", height=320,
        xaxis=dict(tickmode="array", tickvals=list(range(len(e))), ticktext=labels, title=dict(text="query"),
                   tickangle=-45),
        yaxis=dict(title=dict(text="row entropy (nats)"), rangemode="tozero")))
