"""Helpers every figure uses: safe token labels, tensor -> numpy, shared styling."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

# Scales (STYLE.md): diverging for signed values, sequential for probabilities, cyclic for angles.
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"
CYCLIC = "Twilight"
MASKED_COLOR = "#e4e4e4"  # a blocked cell is light grey with a ×, never "a learned zero"
FONT = dict(family="Inter, 'Source Sans Pro', sans-serif", size=13)


def to_numpy(x) -> np.ndarray:
    """Convert once at the boundary: tensors are detached and moved to the CPU."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x)


def escape(text: str) -> str:
    """Plotly interprets <b>, <br>, &lt; ... in labels; escape so a token shows exactly as typed."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def visible(text: str) -> str:
    """Make whitespace-only tokens visible in labels."""
    if text == "":
        return "∅"
    return text.replace(" ", "␣") if text.strip() == "" else text


def token_labels(tokens: Sequence[str], numbered: bool = True) -> list[str]:
    """Escaped axis labels; with `numbered`, 'i token' keeps duplicates ("the" twice) distinct."""
    return [f"{i} {escape(visible(t))}" if numbered else escape(visible(t)) for i, t in enumerate(tokens)]


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left") if title else None,
        font=FONT,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        height=height,
    )  # no template here: Streamlit's theme styles the chart, and a template is deep-copied per figure (slow)
    return fig


def masked_layer(ok: np.ndarray) -> np.ndarray:
    """z of the grey layer drawn beneath a heatmap whose blocked cells are holes (NaN): 1 where blocked, 0 where
    allowed, one uint8 per cell (a quarter of float32 with NaN holes) on a colour scale that is grey at both ends.
    It needs no holes of its own: where both layers have a cell, Plotly's hover reports the top one (the values),
    so only a blocked cell (a hole on top) hovers as this layer's "masked" (checked in a real browser)."""
    return (~np.asarray(ok, dtype=bool)).astype(np.uint8)


def layout_dict(title: str | None = None, height: int | None = None, *, top: int | None = None,
                title_top: bool = False, **extra) -> dict:
    """base_layout's styling as a plain dict, for figures built in one go.Figure call (see fast_figure).

    `top` overrides the top margin; `title_top` pins the title to the top edge (clear of axis labels on top).
    """
    margin = dict(l=10, r=10, t=top if top is not None else (50 if title else 20), b=10)
    head = dict(text=title, x=0.01, xanchor="left", **(dict(y=0.99, yanchor="top") if title_top else {}))
    return dict(**({"title": head} if title else {}), font=FONT, margin=margin, height=height, **extra)


def fast_figure(data: list[dict], layout: dict) -> go.Figure:
    """One go.Figure from plain dicts with Plotly's per-property validation skipped: no update_* calls, each of
    which walks Plotly's property tree (5-7 ms a figure on a busy server instead of ~0.5 ms). Every factory that
    uses it has a test that round-trips its figure through validation (go.Figure(fig.to_dict())); axis titles
    must be dicts (dict(text=...)), as a validated figure would store them.

    The default template (Streamlit's theme once streamlit is imported) comes cut to the trace types present: its
    entries for other types style nothing here, but were copied and walked on every build and every to_dict
    (st.plotly_chart), a third of a small figure's cost."""
    if "template" not in layout:
        layout = {**layout, "template": _template(pio.templates.default, frozenset(t["type"] for t in data))}
    return go.Figure(dict(data=data, layout=layout), _validate=False)


@functools.lru_cache(maxsize=32)
def _template(name: str | None, trace_types: frozenset[str]) -> dict:
    """Template `name`'s layout part plus its data entries for these trace types (plain dict, shared: read-only)."""
    if not name or name == "none":
        return {}
    full = pio.templates[name].to_plotly_json()
    kept = {k: v for k, v in full.get("data", {}).items() if k in trace_types}
    return {"layout": full.get("layout", {}), **({"data": kept} if kept else {})}


def category_axis(labels: list[str], title: str | None = None, **extra) -> dict:
    """A categorical axis whose ticks are exactly `labels` (escaped, numbered token labels)."""
    return dict(type="category", tickmode="array", tickvals=labels, ticktext=labels,
                **({"title": dict(text=title)} if title is not None else {}), **extra)


def png_config(name: str, scale: int = 3) -> dict:
    """st.plotly_chart config: the modebar camera saves a slide-ready PNG named after the view."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:80] or "figure"
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": safe, "scale": scale}}
