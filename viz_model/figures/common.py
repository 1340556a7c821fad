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
TEXT_COLOR = "#31333F"  # the page's own text colour (Streamlit's light theme): 12.6:1 on white
# Okabe & Ito (2008), the colour-blind-safe qualitative palette, its yellow last (1.4:1 on white: fills only)
COLORWAY = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
TEMPLATE = "attention_lab"


def _register_template() -> None:
    """The one template every figure is built with, in the app, in exports and in tests alike.

    Charts are drawn with theme=None (ui/chart.py): Streamlit's chart theme restyles a figure in the browser, so what
    the Python figure says is not what a student sees (its tick and caption greys, its colours), and it wraps each
    title in <b> once per application, twice on every render (#26 finding 14). Here the title is bold by its font
    weight, so no helper adds <b> at all, and the colours a test reads are the colours on the screen."""
    base = pio.templates["plotly_white"].to_plotly_json()
    layout = base["layout"]
    layout.update(font=dict(family=FONT["family"], color=TEXT_COLOR), colorway=COLORWAY,
                  title=dict(x=0.01, font=dict(size=16, weight="bold", color=TEXT_COLOR)),
                  # white labels with the page's text: on a trace-coloured label Plotly picks white or #444 text, as
                  # little as 3.1:1 (Okabe–Ito's pink, mid-Viridis cells); WCAG asks 4.5:1
                  hoverlabel=dict(align="left", bgcolor="white",
                                  font=dict(family=FONT["family"], size=13, color=TEXT_COLOR)))
    for name in ("xaxis", "yaxis"):
        layout[name] = {**layout[name], "tickfont": dict(color=TEXT_COLOR), "linecolor": "#A2B1C6"}
    pio.templates[TEMPLATE] = go.layout.Template(base)


_register_template()


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


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th ... 11th, 12th, 13th ... 21st, 22nd, 32nd, 101st, 111th."""
    n = int(n)
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def head_name(layer: int, head: int) -> str:
    """A head named in words, "layer 1 · head 3": "head 1.3" reads like a decimal number."""
    return f"layer {layer} · head {head}"


def token_labels(tokens: Sequence[str], numbered: bool = True) -> list[str]:
    """Escaped axis labels; with `numbered`, 'i token' keeps duplicates ("the" twice) distinct."""
    return [f"{i} {escape(visible(t))}" if numbered else escape(visible(t)) for i, t in enumerate(tokens)]


def masked_layer(ok: np.ndarray) -> np.ndarray:
    """z of the grey layer drawn beneath a heatmap whose blocked cells are holes (NaN): 1 where blocked, 0 where
    allowed, one uint8 per cell (a quarter of float32 with NaN holes) on a colour scale that is grey at both ends.
    It needs no holes of its own: where both layers have a cell, Plotly's hover reports the top one (the values),
    so only a blocked cell (a hole on top) hovers as this layer's "masked" (checked in a real browser)."""
    return (~np.asarray(ok, dtype=bool)).astype(np.uint8)


def allowed_cells(allowed, shape: tuple[int, ...]) -> np.ndarray:
    """Bool cells, True where a query may attend: `allowed` as an array, or every cell of `shape` when it is None."""
    return np.ones(shape, dtype=bool) if allowed is None else to_numpy(allowed).astype(bool)


def masked_trace(ok: np.ndarray, x, y, name: str = "masked", mark: str | None = None, **kw) -> dict:
    """The grey layer under a heatmap whose blocked cells are holes (NaN), so "blocked" never reads as "learned 0";
    `mark` prints a sign ("×", "−∞") in each blocked cell; kw: hover, axes, gaps."""
    marks = {} if mark is None else dict(text=np.where(ok, "", mark), texttemplate="%{text}")
    return dict(type="heatmap", z=masked_layer(ok), x=x, y=y, name=name, showscale=False,
                colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], **marks, **kw)


def layout_dict(title: str | None = None, height: int | None = None, *, top: int | None = None,
                title_top: bool = False, **extra) -> dict:
    """The shared styling (font, margins, a left-aligned title) as a plain dict, the layout of fast_figure.

    `top` overrides the top margin; `title_top` pins the title to the top edge (clear of axis labels on top).
    """
    margin = dict(l=10, r=10, t=top if top is not None else (50 if title else 20), b=10)
    head = dict(text=title, x=0.01, xanchor="left", **(dict(y=0.99, yanchor="top") if title_top else {}))
    # no template here: fast_figure adds the app's (TEMPLATE), cut to the traces
    return dict(**({"title": head} if title else {}), font=FONT, margin=margin, height=height, **extra)


def domain(lo: float, hi: float) -> list[float]:
    """An axis domain [lo, hi] clipped to [0, 1]: float noise (1.0000000000000002) would fail validation."""
    return [round(min(max(lo, 0.0), 1.0), 6), round(min(max(hi, 0.0), 1.0), 6)]


def panel_row(titles: Sequence[str], spacing: float, *, font_size: int = 16) -> tuple[list[list[float]], list[dict]]:
    """len(titles) panels side by side, as make_subplots(rows=1, cols=n, horizontal_spacing, subplot_titles) lays
    them out: each panel's x domain, and its title as an annotation centred above it (paper coordinates)."""
    n = len(titles)
    w = (1 - spacing * (n - 1)) / n
    domains = [domain(c * (w + spacing), c * (w + spacing) + w) for c in range(n)]
    notes = [dict(text=t, x=(a + b) / 2, y=1.0, xref="paper", yref="paper", xanchor="center", yanchor="bottom",
                  showarrow=False, font=dict(size=font_size)) for t, (a, b) in zip(titles, domains)]
    return domains, notes


def hline(y: float, line: dict, text: str | None = None, position: str = "top right") -> tuple[dict, list[dict]]:
    """fig.add_hline as dicts: a line across the plot at y (a layout shape) and its optional label (annotations)."""
    shape = dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y, line=line)
    if text is None:
        return shape, []
    side = "left" if position.endswith("left") else "right"
    return shape, [dict(text=text, showarrow=False, xref="x domain", x=0 if side == "left" else 1, xanchor=side,
                        yref="y", y=y, yanchor="bottom" if position.startswith("top") else "top")]


def vline(x: float, line: dict) -> dict:
    """fig.add_vline as a dict: a line from the bottom to the top of the plot at x (a layout shape)."""
    return dict(type="line", xref="x", x0=x, x1=x, yref="y domain", y0=0, y1=1, line=line)


def fast_figure(data: list[dict], layout: dict, *, frames: list[dict] | None = None,
                template: str | None = None) -> go.Figure:
    """One go.Figure from plain dicts with Plotly's per-property validation skipped: no update_* calls, each of
    which walks Plotly's property tree (5-7 ms a figure on a busy server instead of ~0.5 ms). Every figure factory
    builds its figure with it, and tests/test_figures_roundtrip.py checks that each one's figure passes validation
    unchanged (go.Figure(fig.to_dict())): write values as validation stores them (axis titles as dict(text=...),
    lists not tuples); subplots are axes with explicit domains and anchors (see panel_row), add_hline a shape.

    The app's template (TEMPLATE) comes cut to the trace types present: its
    entries for other types style nothing here, but were copied and walked on every build and every to_dict
    (st.plotly_chart), a third of a small figure's cost. `template` names another template (cut the same way);
    `frames` (plain dicts too) animate the figure. A value of None means "not set", as it does for go.Figure."""
    if "template" not in layout:
        name = TEMPLATE if template is None else template
        layout = {**layout, "template": _template(name, frozenset(t["type"] for t in data))}
    return go.Figure(dict(data=data, layout=layout, **({"frames": frames} if frames else {})), _validate=False)


# lru_cache (figures have no ui.cache.cached): a pure function of immutable arguments (a template's name, a frozenset
# of trace types); the dict is shared: read-only.
@functools.lru_cache(maxsize=32)
def _template(name: str | None, trace_types: frozenset[str]) -> dict:
    """Template `name`'s layout part plus its data entries for these trace types (plain dict, shared: read-only)."""
    if not name or name == "none":
        return {}
    full = pio.templates[name].to_plotly_json()
    kept = {k: v for k, v in full.get("data", {}).items() if k in trace_types}
    return {"layout": full.get("layout", {}), **({"data": kept} if kept else {})}


def axis(title: str | None = None, **extra) -> dict:
    """An axis as a dict, its title (if any) as dict(text=...), the form validation stores."""
    return dict(**({"title": dict(text=title)} if title is not None else {}), **extra)


def category_axis(labels: list[str], title: str | None = None, **extra) -> dict:
    """A categorical axis whose ticks are exactly `labels` (escaped, numbered token labels)."""
    return dict(type="category", tickmode="array", tickvals=labels, ticktext=labels,
                **({"title": dict(text=title)} if title is not None else {}), **extra)


def png_config(name: str, scale: int = 3) -> dict:
    """st.plotly_chart config: the modebar camera saves a slide-ready PNG named after the view."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:80] or "figure"
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": safe, "scale": scale}}


# -- numbers printed on cells (the Masks panels, the Q/K/V score cells) ---------------------------------------
PANEL_PX = 210    # one of the four panels in a chart about 940 px wide (the wide layout beside the sidebar)
CHAR_PX = 8       # a digit of 12 px type is about this wide: a number gets at most this much room per character


def shows_text(T: int, chars: int) -> bool:
    """Whether a panel of T x T cells has room to print `chars`-character labels in every cell. Plotly shrinks cell
    text to fit its cell, so "−0.53" in 7 columns came out about 6 px high; below this the hover alone tells."""
    return T <= 12 and PANEL_PX / T >= chars * CHAR_PX
