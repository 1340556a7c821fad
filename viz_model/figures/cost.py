"""Figures of what attention costs: measured time and memory against T on log-log axes, and the KV cache's size."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from viz_model.figures.common import COLORWAY, escape, fast_figure, layout_dict

# One colour per way of computing attention, one dash per mode: the legend reads as a 2 x 2 table.
KIND_COLORS = {"materialised": "#D62728", "sdpa": "#1F77B4", "computed": "#7F7F7F"}
MODE_DASH = {"forward": "solid", "forward+backward": "dash", "computed": "dot"}
# one colour per model, the colour-blind-safe ones (Tableau's orange and green merge under protanopia, ΔE00 1.3)
KV_COLORS = tuple(COLORWAY[:7])


def slope_label(name: str, slope: float | None) -> str:
    """The legend entry of a measured line: its name and the fitted log-log slope (n/a below two points)."""
    return f"{escape(name)} · slope {'n/a' if slope is None else f'{slope:.2f}'}"


def _pow2_ticks(xs: Sequence[float]) -> dict:
    """Log axis ticks at the powers of two the data covers (T = 64, 128, ...), written out in full."""
    lo, hi = (min(xs), max(xs)) if xs else (1, 1)
    ticks = [2**i for i in range(0, 24) if lo <= 2**i <= hi]
    return dict(tickmode="array", tickvals=ticks, ticktext=[f"{t:,}" for t in ticks]) if ticks else {}


def loglog_chart(lines: Sequence[dict], *, y_title: str, unit: str, title: str | None = None,
                 height: int = 420) -> go.Figure:
    """Lines of y against T on log-log axes, where a slope of 1 is linear and 2 quadratic. Each line is a dict:
    name, T (list), y (list), slope (float | None, shown in the legend), kind ("materialised" | "sdpa" |
    "computed") and mode ("forward" | "forward+backward" | "computed")."""
    data, all_T = [], []
    for ln in lines:
        all_T += list(ln["T"])
        data.append(dict(
            type="scatter", mode="lines+markers", x=list(ln["T"]), y=list(ln["y"]),
            name=slope_label(ln["name"], ln.get("slope")), meta=dict(slope=ln.get("slope")),
            line=dict(color=KIND_COLORS.get(ln["kind"], "#444444"), dash=MODE_DASH.get(ln["mode"], "solid"),
                      width=2), marker=dict(size=7),
            hovertemplate=f"{escape(ln['name'])}<br>T = %{{x:,}}<br>%{{y:,.3g}} {escape(unit)}<extra></extra>"))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest",
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, font=dict(size=12)),
        xaxis=dict(type="log", title=dict(text="sequence length T (log scale)"), **_pow2_ticks(all_T)),
        yaxis=dict(type="log", title=dict(text=f"{y_title} (log scale)"), dtick=1)))


def kv_cache_chart(lines: Sequence[dict], *, title: str | None = None, height: int = 440) -> go.Figure:
    """The KV cache's size against T, one line per model shape, log-log (its slope is 1: linear in T). Each
    line: name, T (list), mib (list), layers (int), note (str: the shape, shown on hover)."""
    data, all_T = [], []
    for i, ln in enumerate(lines):
        all_T += list(ln["T"])
        label = f"{escape(ln['name'])} · {ln['layers']} layer{'s' if ln['layers'] != 1 else ''}"
        data.append(dict(
            type="scatter", mode="lines+markers", x=list(ln["T"]), y=list(ln["mib"]), name=label,
            line=dict(color=KV_COLORS[i % len(KV_COLORS)], width=2), marker=dict(size=6),
            hovertemplate=f"{label}<br>{escape(ln['note'])}<br>T = %{{x:,}}<br>KV cache %{{y:,.4g}} MiB"
                          "<extra></extra>"))
    return fast_figure(data, layout_dict(
        title, height=height, top=60 if title else 20, hovermode="closest",
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, font=dict(size=12)),
        xaxis=dict(type="log", title=dict(text="tokens in the cache T (log scale)"), **_pow2_ticks(all_T)),
        yaxis=dict(type="log", title=dict(text="KV cache, MiB (log scale)"), dtick=1)))
