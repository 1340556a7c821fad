"""Figures for Attention vs attribution: the tokens × methods heatmap, and the methods' rank correlations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import DIVERGING, escape, fast_figure, layout_dict, token_labels


def methods_heatmap(scores: dict[str, np.ndarray], names: dict[str, str], short: dict[str, str],
                    tokens: Sequence[str], positions: Sequence[int] | None = None, title: str | None = None
                    ) -> go.Figure:
    """scores: method -> (n,) raw scores over the tokens; names: method -> its label (hover), short: its column
    label (five columns fit a phone). Colour: each method divided
    by its largest |score| (−1 … 1, so signed and unsigned methods share one diverging scale); hover: the raw value.
    Rows are the tokens in order, labelled with their positions in the model's input (default 0, 1, ...), so a
    repeated word keeps its own row; columns are the methods."""
    methods = list(scores)
    n = len(tokens)
    raw = np.array([np.asarray(scores[m], dtype=float) for m in methods]).T  # (n, M)
    if raw.shape != (n, len(methods)):
        raise ValueError(f"every method needs one score per token ({n}); got {raw.shape[0]}.")
    peak = np.abs(raw).max(0)
    norm = np.divide(raw, peak, out=np.zeros_like(raw), where=peak > 0)
    positions = range(n) if positions is None else positions
    labels = [f"{p} {label}" for p, label in zip(positions, token_labels(tokens, numbered=False))]
    hover = [[f"{labels[i]} · {escape(names[m])}: {raw[i, j]:.4f} ({norm[i, j]:+.2f} of its largest)"
              for j, m in enumerate(methods)] for i in range(n)]
    heat = dict(type="heatmap", z=norm, x=list(range(len(methods))), y=list(range(n)), zmin=-1, zmax=1, zmid=0,
                colorscale=DIVERGING, hovertext=hover, hoverinfo="text", xgap=1, ygap=1, name="score / max |score|",
                text=(np.round(norm, 2) + 0.0).astype(str), texttemplate="%{text}" if n <= 24 else "",
                colorbar=dict(title=dict(text="score ÷ max |score|", side="right"), thickness=12))
    xaxis = dict(title=dict(text="method"), tickmode="array", tickvals=list(range(len(methods))),
                 ticktext=[escape(short[m]) for m in methods], side="top")
    yaxis = dict(title=dict(text="input token"), tickmode="array", tickvals=list(range(n)), ticktext=labels,
                 autorange="reversed")
    return fast_figure([heat], layout_dict(title, height=160 + 26 * n, top=80 if title else 50, xaxis=xaxis,
                                           yaxis=yaxis))


def agreement_matrix(rho: np.ndarray, names: Sequence[str], short: Sequence[str], title: str | None = None
                     ) -> go.Figure:
    """rho (M, M): Spearman's ρ between methods (names for the hover, short for the ticks), on a diverging scale
    from −1 to 1, the numbers written in; an undefined ρ (a constant method) reads "—" and says so on hover. The
    diagonal (a method against itself, 1 by definition) is left blank, so the colours and the chart's summary are
    about the pairs."""
    rho = np.asarray(rho, dtype=float).copy()
    M = len(names)
    if rho.shape != (M, M):
        raise ValueError(f"the correlation matrix must be {M}x{M}, got {rho.shape}.")
    labels = [escape(s) for s in short]
    if rho.shape == (M, M):
        np.fill_diagonal(rho, np.nan)
    text = [["" if i == j else "—" if np.isnan(v) else f"{v:.2f}" for j, v in enumerate(row)]
            for i, row in enumerate(rho)]
    hover = [[f"{escape(names[i])}: itself" if i == j else f"{escape(names[i])} vs {escape(names[j])}: ρ = " + (
        "undefined (one side is constant)" if np.isnan(rho[i, j]) else f"{rho[i, j]:.3f}")
              for j in range(M)] for i in range(M)]
    heat = dict(type="heatmap", z=rho, x=list(range(M)), y=list(range(M)), zmin=-1, zmax=1, zmid=0,
                colorscale=DIVERGING, text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text",
                hoverongaps=False, xgap=2, ygap=2, name="Spearman ρ",
                colorbar=dict(title=dict(text="Spearman ρ", side="right"), thickness=12))
    ticks = dict(tickmode="array", tickvals=list(range(M)), ticktext=labels)
    return fast_figure([heat], layout_dict(title, height=460, top=60 if title else 20,
                                           xaxis=dict(title=dict(text="method"), **ticks),
                                           yaxis=dict(title=dict(text="method"), autorange="reversed", **ticks)))
