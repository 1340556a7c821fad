"""Figures of RNN vs transformer: graph depth and fwd+bwd time against T, gradient and accuracy by distance."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from viz_model.figures.common import escape, fast_figure, hline, layout_dict

# One colour per model everywhere on the page; a reference or bound is grey and dotted.
KIND_COLORS = {"rnn": "#D62728", "lstm": "#FF7F0E", "transformer": "#1F77B4", "reference": "#7F7F7F",
               "trained": "#BBBBBB"}
LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.2, x=0, font=dict(size=12))


def _positive(ys: Sequence[float]) -> list[float | None]:
    """Values for a log axis: 0 (a gradient that underflowed float32), negative or non-finite become gaps."""
    return [float(y) if y is not None and math.isfinite(y) and y > 0 else None for y in ys]


def _pow2_ticks(xs: Sequence[float]) -> dict:
    """Log-axis ticks at the powers of two the data covers, written out in full (16, 32, ..., 1,024)."""
    lo, hi = (min(xs), max(xs)) if xs else (1, 1)
    ticks = [2**i for i in range(0, 24) if lo <= 2**i <= hi]
    return dict(tickmode="array", tickvals=ticks, ticktext=[f"{t:,}" for t in ticks]) if ticks else {}


def _log_axis(title: str, ys: Sequence[float | None], power: bool = True) -> dict:
    """A log y axis: ticks at whole decades (1e-6, 1e-5, ...) when the data spans one or more, else Plotly's own
    (a narrow range with decade ticks would show one label or none)."""
    kept = [y for y in ys if y is not None]
    wide = bool(kept) and math.log10(max(kept) / min(kept)) >= 1
    return dict(type="log", title=dict(text=title), **(dict(exponentformat="power") if power else {}),
                **(dict(dtick=1) if wide else {}))


def _line(ln: dict, x: list, y: list, hover: str, *, width: int = 2, size: int = 6) -> dict:
    return dict(type="scatter", mode=ln.get("mode", "lines+markers"), x=x, y=y, name=escape(ln["name"]),
                line=dict(color=KIND_COLORS.get(ln.get("kind", ""), "#444444"), dash=ln.get("dash", "solid"),
                          width=ln.get("width", width)), marker=dict(size=ln.get("size", size)), hovertemplate=hover)


def depth_chart(lines: Sequence[dict], T: int, *, title: str | None = None, height: int = 360) -> go.Figure:
    """Computation-graph depth (operations that must wait for the one before) against T, log-log. Each line:
    name, kind, T (list), depth (list). The chosen T is a vertical dotted line."""
    data, all_T = [], []
    for ln in lines:
        all_T += list(ln["T"])
        data.append(_line(ln, [int(t) for t in ln["T"]], [int(d) for d in ln["depth"]],
                          f"{escape(ln['name'])}<br>T = %{{x:,}}<br>depth %{{y:,}} sequential steps<extra></extra>"))
    shape = dict(type="line", xref="x", x0=int(T), x1=int(T), yref="y domain", y0=0, y1=1,
                 line=dict(color="#444444", dash="dot", width=1))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest", legend=LEGEND_BELOW, shapes=[shape],
        xaxis=dict(type="log", title=dict(text="sequence length T (log scale)"), **_pow2_ticks(all_T)),
        # a short title: the axis is about 200 px tall, and "graph depth: sequential steps (log scale)" ran up into
        # the chart's title (#43); the chart's title and the page's text say what graph depth is
        yaxis=dict(type="log", title=dict(text="graph depth (log)"), dtick=1)))


def timing_chart(lines: Sequence[dict], *, title: str | None = None, height: int = 420) -> go.Figure:
    """Measured forward+backward ms against T on log-log axes (slope 1 = linear in T). Each line: name (with its
    fitted slope), kind ("rnn" | "lstm" | "transformer"), T (list), ms (list)."""
    data, all_T = [], []
    for ln in lines:
        all_T += list(ln["T"])
        data.append(_line(ln, [int(t) for t in ln["T"]], _positive(ln["ms"]),
                          f"{escape(ln['name'])}<br>T = %{{x:,}}<br>%{{y:,.3g}} ms<extra></extra>", size=7))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest", legend=LEGEND_BELOW,
        xaxis=dict(type="log", title=dict(text="sequence length T (log scale)"), **_pow2_ticks(all_T)),
        yaxis=_log_axis("forward + backward, ms per batch (log scale)", [y for t in data for y in t["y"]],
                        power=False)))


def gradient_chart(lines: Sequence[dict], *, marker_distance: int | None = None, marker_text: str = "",
                   title: str | None = None, height: int = 420) -> go.Figure:
    """‖∂ℓ/∂x_t‖ against the distance T−1−t on a log y axis: a straight line is geometric decay (or growth). Each
    line: name, kind (colour), d (list of distances), y (list); optional dash, mode, width, size. An optional
    vertical line marks one distance (the key the recall task asks for)."""
    data = [_line(ln, [int(d) for d in ln["d"]], _positive(ln["y"]),
                  f"{escape(ln['name'])}<br>distance %{{x}}<br>%{{y:.3g}}<extra></extra>") for ln in lines]
    shapes, notes = [], []
    if marker_distance is not None:
        shapes.append(dict(type="line", xref="x", x0=int(marker_distance), x1=int(marker_distance), yref="y domain",
                           y0=0, y1=1, line=dict(color="#444444", dash="dot", width=1)))
        notes.append(dict(text=escape(marker_text), x=int(marker_distance), xref="x", y=1, yref="y domain",
                          xanchor="right", yanchor="top", showarrow=False, font=dict(size=12)))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest", legend=LEGEND_BELOW,
        shapes=shapes, annotations=notes,
        xaxis=dict(title=dict(text="distance from the last position, T − 1 − t (steps back)")),
        yaxis=_log_axis("‖∂ℓ/∂x_t‖ (log scale)", [y for t in data for y in t["y"]])))


def jacobian_chart(step_norms: Sequence[float], product_norms: Sequence[float], bound: Sequence[float], *,
                   title: str | None = None, height: int = 420) -> go.Figure:
    """The chain rule's factors by distance d: each step's ‖∂h_t/∂h_(t−1)‖₂ (the d-th factor, t = T−d), the norm of
    their product ‖J_(T−1) ⋯ J_(T−d)‖₂, and the product of the step norms (a bound the product never exceeds).
    step_norms has T−1 entries (d = 1 … T−1); product_norms and bound have T (d = 0 … T−1)."""
    steps = list(range(1, len(step_norms) + 1))
    prods = list(range(len(product_norms)))
    hover = "<br>distance %{x}<br>%{y:.3g}<extra></extra>"
    data = [
        _line(dict(name="one step ‖J_t‖₂", kind="rnn", mode="markers"), steps, _positive(step_norms),
              "one step ‖∂h_t/∂h_(t−1)‖₂" + hover),
        _line(dict(name="their product ‖J ⋯ J‖₂", kind="transformer"), prods, _positive(product_norms),
              "‖∂h_(T−1)/∂h_(T−1−d)‖₂" + hover, width=3),
        _line(dict(name="product of the step norms (bound)", kind="reference", dash="dot", mode="lines"), prods,
              _positive(bound), "product of d step norms" + hover),
    ]
    shape, _ = hline(1.0, dict(color="#444444", dash="dash", width=1))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest", legend=LEGEND_BELOW, shapes=[shape],
        xaxis=dict(title=dict(text="distance d = number of steps multiplied")),
        yaxis=_log_axis("spectral norm (log scale; dashed: 1)", [y for t in data for y in t["y"]])))


def accuracy_chart(lines: Sequence[dict], chance: float, *, title: str | None = None,
                   height: int = 400) -> go.Figure:
    """Recall accuracy against the distance to the key, one line per model, with chance drawn. Each line: name,
    kind, d (list), accuracy (list of shares in [0, 1]); optional dash and width (lines that coincide)."""
    data = [_line(ln, [int(d) for d in ln["d"]], [float(a) for a in ln["accuracy"]],
                  f"{escape(ln['name'])}<br>distance %{{x}}<br>accuracy %{{y:.1%}}<extra></extra>", size=7)
            for ln in lines]
    shape, notes = hline(float(chance), dict(color="#7F7F7F", dash="dash", width=1),
                         f"chance 1/{round(1 / chance)} = {chance:.3f}", "top right")
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest", legend=LEGEND_BELOW,
        shapes=[shape], annotations=notes,
        xaxis=dict(title=dict(text="distance d from the key to the final ':' (d − 1 filler letters between)")),
        yaxis=dict(title=dict(text="share of held-out inputs answered right"), range=[0, 1.05], tickformat=".0%")))


__all__ = ["KIND_COLORS", "accuracy_chart", "depth_chart", "gradient_chart", "jacobian_chart",
           "timing_chart"]
