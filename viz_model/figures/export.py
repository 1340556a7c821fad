"""Exports of any figure: the numbers behind it as CSV, the figure as a standalone offline HTML file."""

from __future__ import annotations

import base64
import html
import io

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio

from viz_model.figures.common import fit_texts


def _typed(values):
    """Plotly 6+ stores numpy arrays as {'dtype', 'bdata', 'shape'}; go objects give arrays back, except in a figure
    rebuilt from another's to_dict() without validation (fast_figure), whose traces keep the encoded dict."""
    if isinstance(values, dict) and "bdata" in values:
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = values.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    return values


def _decode(values):
    return None if values is None else np.asarray(_typed(values), dtype=object)


def _axis_labels(fig: go.Figure, trace, axis: str, n: int) -> list[str]:
    ref = getattr(trace, f"{axis}axis", None) or axis
    layout_axis = fig.layout[f"{axis}axis{ref[1:]}" if len(ref) > 1 else f"{axis}axis"]
    ticks = getattr(layout_axis, "ticktext", None)
    coords = getattr(trace, axis, None)
    if ticks is not None and len(ticks) == n:
        return [_plain(t) for t in ticks]
    if coords is not None and len(coords) == n:
        return [_plain(c) for c in coords]
    return [str(i) for i in range(n)]


def _plain(label) -> str:
    """A label as the student typed it: figures escape "<bos>" to "&lt;bos&gt;" for Plotly, a CSV must not."""
    return html.unescape(str(label))


def _hole_value(fig: go.Figure, trace) -> float | None:
    """What a hole (NaN) of a heatmap stands for in its numbers. On a scale that starts at 0 (attention weights,
    shares) a masked or not-yet-existing key has weight exactly 0; over a grey "masked" layer on the same axes the
    holes are masked scores, −∞. None: leave the cell blank."""
    if getattr(trace, "zmin", None) == 0:
        return 0.0
    under = [t for t in fig.data if t is not trace and t.type == "heatmap" and (t.name or "").endswith("masked")
             and (t.xaxis, t.yaxis) == (trace.xaxis, trace.yaxis)]
    return -np.inf if under else None


def figure_tables(fig: go.Figure) -> dict[str, pd.DataFrame]:
    """One table per trace: heatmaps as labelled matrices, lines/bars as x, y columns."""
    tables: dict[str, pd.DataFrame] = {}
    for i, trace in enumerate(fig.data):
        name = trace.name or f"trace{i}"
        z = getattr(trace, "z", None)
        if z is not None:
            z = np.asarray(_typed(z), dtype=float)
            if z.ndim == 2:
                rows = _axis_labels(fig, trace, "y", z.shape[0])
                cols = _axis_labels(fig, trace, "x", z.shape[1])
                if (hole := _hole_value(fig, trace)) is not None:
                    z = np.where(np.isnan(z), hole, z)
                tables[name] = pd.DataFrame(z, index=rows, columns=cols)
            continue
        x, y = _decode(getattr(trace, "x", None)), _decode(getattr(trace, "y", None))
        if x is not None or y is not None:
            n = len(y if y is not None else x)
            tables[name] = pd.DataFrame({"x": x if x is not None else range(n),
                                         "y": y if y is not None else [None] * n})
    return tables


def figure_csv(fig: go.Figure) -> str:
    """All traces' numbers in one CSV, each block headed by '# trace name'."""
    out = io.StringIO()
    for name, table in figure_tables(fig).items():
        out.write(f"# {name}\n")
        table.to_csv(out)
        out.write("\n")
    return out.getvalue() or "# this figure has no tabular data\n"


def figure_html(fig: go.Figure, title: str = "Attention Lab figure") -> str:
    """A standalone HTML file that works offline (plotly.js inlined, no CDN)."""
    # re-validated, its template (the app's) travelling with it; long titles wrapped as the app draws them
    fig = readable_numbers(go.Figure(fit_texts(fig.to_dict())))
    return pio.to_html(fig, include_plotlyjs=True, full_html=True, config={"displaylogo": False},
                       default_width="100%", div_id="figure").replace("<head>", f"<head><title>{title}</title>", 1)


_CLEAR = [[0.0, "rgba(0,0,0,0)"], [1.0, "rgba(0,0,0,0)"]]


def readable_numbers(fig: go.Figure) -> go.Figure:
    """Numbers printed on heatmap cells in black or white, whichever reads better on each cell (≥ 4.58:1 on any
    colour). plotly.js picks white or #444 itself, as little as 3.1:1 on mid-scale Viridis cells, and a heatmap's
    text colour is one colour for the whole trace (textfont.color takes no array): so the trace's own numbers are
    made transparent (they stay in its data, for hover and tests) and drawn again by two see-through heatmaps on
    top, one per text colour, which take no hover. Changes `fig` in place and returns it."""
    from viz_model.figures.colour import TEXT_ON_DARK, TEXT_ON_LIGHT, dark_text, scale_colours

    overlays = []
    for t in fig.data:
        if t.type != "heatmap" or not t.texttemplate or t.text is None or (t.textfont and t.textfont.color):
            continue
        z = np.asarray(_typed(t.z), dtype=float)
        text = np.asarray(_typed(t.text), dtype=object)
        if z.ndim != 2 or text.shape != z.shape or np.isnan(z).all():
            continue
        scale = t.colorscale
        if scale is None:  # a scale from the layout (coloraxis, template): plotly.js keeps its own text colours
            continue
        scale = pc.get_colorscale(scale) if isinstance(scale, str) else list(scale)
        if t.reversescale:
            scale = [(1.0 - float(s), c) for s, c in reversed(scale)]
        lo = np.nanmin(z) if t.zmin is None else t.zmin
        hi = np.nanmax(z) if t.zmax is None else t.zmax
        dark = dark_text(scale_colours(np.nan_to_num(z, nan=lo), scale, lo, hi))
        shown = ~np.isnan(z) & (text != "") & np.array([[x is not None for x in row] for row in text])
        t.textfont.color = "rgba(0,0,0,0)"
        for where, colour in ((shown & dark, TEXT_ON_LIGHT), (shown & ~dark, TEXT_ON_DARK)):
            if where.any():
                overlays.append(go.Heatmap(
                    z=np.where(where, 0.0, np.nan), x=t.x, y=t.y, text=np.where(where, text, ""),
                    texttemplate=t.texttemplate, textfont=dict(size=t.textfont.size, family=t.textfont.family,
                                                               color=colour),
                    colorscale=_CLEAR, showscale=False, hoverinfo="skip", xaxis=t.xaxis, yaxis=t.yaxis,
                    xgap=t.xgap, ygap=t.ygap, name=f"{t.name} · numbers", showlegend=False))
    if overlays:
        fig.add_traces(overlays)
    return fig


PRESENTER_TICKS = 16  # px: tick labels on a projector


def presenter_style(fig: go.Figure) -> go.Figure:
    """Larger fonts and lines, high-contrast colour-blind-safe scales: for the projector."""
    fig.update_layout(font=dict(size=18), title_font=dict(size=22), hoverlabel=dict(font_size=18))
    fig.update_annotations(font_size=18)
    # tick labels (a heatmap's tokens) are styled per axis, by the chart theme or small on purpose (10 px in the four
    # mask panels), so the layout's font does not reach them: set every axis's own
    fig.update_xaxes(tickfont=dict(size=PRESENTER_TICKS), title_font=dict(size=18))
    fig.update_yaxes(tickfont=dict(size=PRESENTER_TICKS), title_font=dict(size=18))
    for trace in fig.data:
        if trace.type == "heatmap" and trace.showscale is not False:
            trace.colorbar.tickfont.size = PRESENTER_TICKS
        if trace.type == "scatter":
            trace.update(line=dict(width=4), marker=dict(size=10))
        scale = getattr(trace, "colorscale", None)
        if trace.type == "heatmap" and scale is not None:
            # colourscales arrive resolved to colour lists: recognise them by their first colour
            first = str(scale[0][1]).lower() if len(scale) else ""
            if first in _SEQ_STARTS:
                trace.colorscale = "Cividis"
            elif first in _DIV_STARTS:
                trace.colorscale = "PuOr_r"
    return fig


def _start(name: str) -> str:
    import plotly.colors as pc

    return str(pc.get_colorscale(name)[0][1]).lower()


_SEQ_STARTS = {_start("Viridis")}
_DIV_STARTS = {_start("RdBu_r"), _start("RdBu")}
