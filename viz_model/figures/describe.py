"""A chart in one sentence, computed from its own data: the text alternative every chart carries.

"Attention (layer 0 · head 1): the largest attention is 0.62, at query '3 it' and key '1 animal' (values 0 to 0.62)."
Labels are read where the CSV export reads them (export._axis_labels), so the sentence and the table agree.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_model.figures.export import _axis_labels, _decode, _plain, _typed

LIMIT = 300          # characters: one sentence, cut with "…"
NAMED = 5            # curves (or bar series) named before "and N more"
PANELS = 3           # up to this many heatmaps are described one by one; more are a grid, described as a whole
LABEL_CHARS = 24     # a long token is cut in the sentence (the data table has it whole)


def text(markup) -> str:
    """Plotly markup as plain text: <br> a space, <sub>x</sub> "(x)", other tags dropped, &lt; back to '<'.
    Tags go before unescaping: a student's "<b>" arrives escaped and stays."""
    s = re.sub(r"<br\s*/?>", " ", "" if markup is None else str(markup), flags=re.I)
    s = re.sub(r"<sub>(.*?)</sub>", r"(\1)", s, flags=re.I)
    s = html.unescape(re.sub(r"<[^>]*>", "", s))
    return re.sub(r"\s+", " ", s).strip()


def number(v: float) -> str:
    """A value as the sentence says it: 0.62, 3.14, 1,235, 0.0012, 7, -inf."""
    v = float(v)
    if not np.isfinite(v):
        return "n/a" if np.isnan(v) else ("-inf" if v < 0 else "inf")
    if v == int(v) and abs(v) < 1e6:
        return f"{int(v):,}"
    a = abs(v)
    return f"{v:,.0f}" if a >= 100 else f"{v:.2f}" if a >= 0.01 else f"{v:.2g}"


def _label(s: str) -> str:
    s = str(s)
    return f"'{s if len(s) <= LABEL_CHARS else s[:LABEL_CHARS - 1] + '…'}'"


def _axis(fig: go.Figure, trace, axis: str, follow: bool = True):
    """The layout axis a trace is drawn on, or (follow) the one it matches: a panel sharing its neighbour's ticks."""
    ref = getattr(trace, f"{axis}axis", None) or axis
    ax = fig.layout[f"{axis}axis{ref[1:]}"]
    return fig.layout[f"{axis}axis{ax.matches[1:]}"] if follow and ax.matches else ax


def _axis_name(fig: go.Figure, trace, axis: str, default: str) -> str:
    """An axis's title without its gloss: "query (attending)" -> "query", "key · dotted line = ..." -> "key"."""
    title = text(getattr(_axis(fig, trace, axis).title, "text", None))
    return re.split(r"\s*[(·→:,;]", title, maxsplit=1)[0].strip() or default


def _numbers(values) -> np.ndarray:
    arr = _decode(values)
    if arr is None:
        return np.array([], dtype=float)
    return pd.to_numeric(pd.Series(arr.ravel()), errors="coerce").to_numpy(float)


def _panel_name(fig: go.Figure, trace) -> str:
    """The title above a subplot (an annotation over its x domain, nearest its top), else the trace's name."""
    xd, yd = _axis(fig, trace, "x", False).domain or (0, 1), _axis(fig, trace, "y", False).domain or (0, 1)
    best, gap = None, 0.08
    for note in fig.layout.annotations or ():
        if note.xref != "paper" or note.x is None or note.y is None or not note.text:
            continue
        if xd[0] - 1e-6 <= note.x <= xd[1] + 1e-6 and abs(note.y - yd[1]) <= gap:
            best, gap = note, abs(note.y - yd[1])
    name = text(best.text) if best is not None else text(trace.name)
    m = re.fullmatch(r"L(\d+)\s*·?\s*H(\d+)(.*)", name)
    return f"layer {m[1]} · head {m[2]}{m[3]}" if m else name


def chosen_cells(z: np.ndarray) -> np.ndarray:
    """The cells a summary reads: not holes (masked), and where every row is a distribution (attention weights, each
    row summing to 1) not a row with a single open cell, whose weight 1 the mask forced (causal attention's first
    query), unless every row is one."""
    ok = np.isfinite(z)
    rows = ok.any(1)
    sums = np.where(ok, z, 0.0).sum(1)
    if rows.any() and np.allclose(sums[rows], 1.0, atol=1e-3) and (np.where(ok, z, 0.0) >= 0).all():
        choice = ok & (ok.sum(1, keepdims=True) > 1)
        if choice.any():
            return choice
    return ok


def _largest(fig: go.Figure, trace) -> tuple[float, str, str, float, bool] | None:
    """(largest value, its row label, its column label, smallest value, forced rows left out) over chosen_cells."""
    z = np.asarray(_typed(trace.z), dtype=float)
    if z.ndim != 2:
        return None
    ok = chosen_cells(z)
    if not ok.any():
        return None
    r, c = np.unravel_index(int(np.argmax(np.where(ok, z, -np.inf))), z.shape)
    rows, cols = _axis_labels(fig, trace, "y", z.shape[0]), _axis_labels(fig, trace, "x", z.shape[1])
    return float(z[r, c]), rows[r], cols[c], float(z[ok].min()), bool((np.isfinite(z) & ~ok).any())


def _what(trace) -> str:
    return text(trace.name) if trace.name and not re.fullmatch(r"L\d+H\d+", trace.name) else "value"


def _cell(fig: go.Figure, trace) -> str:
    found = _largest(fig, trace)
    if found is None:
        return "no values"
    v, row, col, lo, forced = found
    ry, cx = _axis_name(fig, trace, "y", "row"), _axis_name(fig, trace, "x", "column")
    choice = f" where the {ry} has a choice" if forced else ""
    return (f"the largest {_what(trace)}{choice} is {number(v)}, at {ry} {_label(row)} and {cx} {_label(col)} "
            f"(values {number(lo)} to {number(v)})")


def _panel(fig: go.Figure, trace) -> str:
    found = _largest(fig, trace)
    if found is None:
        return f"{_panel_name(fig, trace)}: no values"
    v, row, col, _, _ = found
    ry, cx = _axis_name(fig, trace, "y", "row"), _axis_name(fig, trace, "x", "column")
    return f"{_panel_name(fig, trace)}: largest {number(v)} at {ry} {_label(row)}, {cx} {_label(col)}"


def _heatmaps(fig: go.Figure, traces: list) -> str:
    if len(traces) == 1:
        return _cell(fig, traces[0])
    shared = len({(t.zmin, t.zmax) for t in traces}) == 1 and traces[0].zmin is not None
    if len(traces) <= PANELS or not shared:  # panels of different things: each its own
        return f"{len(traces)} panels; " + "; ".join(_panel(fig, t) for t in traces)
    found = [(f, t) for t in traces if (f := _largest(fig, t)) is not None]
    if not found:
        return f"{len(traces)} panels, no values"
    (v, row, col, _, forced), top = max(found, key=lambda ft: ft[0][0])
    ry, cx = _axis_name(fig, top, "y", "row"), _axis_name(fig, top, "x", "column")
    choice = f" where the {ry} has a choice" if forced else ""
    return (f"{len(traces)} panels; the largest {_what(top)}{choice} is {number(v)}, in {_panel_name(fig, top)}, "
            f"at {ry} {_label(row)} and {cx} {_label(col)}")


def _bar_labels(fig: go.Figure, trace, axis: str, n: int) -> list[str]:
    """Each bar's category as the axis shows it (ticktext where the axis maps its values to text)."""
    coords = _decode(getattr(trace, axis, None))
    if coords is None or len(coords) != n:
        return [str(i) for i in range(n)]
    ax = _axis(fig, trace, axis)
    if ax.tickvals is not None and ax.ticktext is not None and len(ax.tickvals) == len(ax.ticktext):
        shown = {str(v): t for v, t in zip(ax.tickvals, ax.ticktext)}
        return [text(shown[str(c)]) if str(c) in shown else _plain(c) for c in coords]
    return [_plain(c) for c in coords]


def _bars(fig: go.Figure, traces: list) -> str:
    parts = []
    for t in traces[:NAMED]:
        value_axis, label_axis = ("x", "y") if t.orientation == "h" else ("y", "x")
        v = _numbers(getattr(t, value_axis, None))
        if not np.isfinite(v).any():
            continue
        labels = _bar_labels(fig, t, label_axis, len(v))
        hi, lo = int(np.nanargmax(v)), int(np.nanargmin(v))
        name = f"{text(t.name)}: " if t.name and len(traces) > 1 else ""
        if len(v) == 1:
            parts.append(f"{name}{_label(labels[hi])} {number(v[hi])}")
        elif np.nanmin(v) == np.nanmax(v):
            parts.append(f"{name}all {len(v)} are {number(v[hi])}")
        else:
            parts.append(f"{name}largest {_label(labels[hi])} {number(v[hi])}, "
                         f"smallest {_label(labels[lo])} {number(v[lo])}")
    more = f"; and {len(traces) - NAMED} more series" if len(traces) > NAMED else ""
    return (f"{len(traces)} bar series; " if len(traces) > 1 else "bars; ") + "; ".join(parts) + more


def _curve(t, i: int) -> str | None:
    y = _numbers(t.y)
    ok = y[np.isfinite(y)]
    name = text(t.name) or f"curve {i + 1}"
    if not len(y):
        return None
    if not len(ok):
        return f"{name}: {len(y)} marked points"
    if len(ok) == 1:
        return f"{name} {number(ok[0])}"
    if "lines" in (t.mode or "lines"):
        return f"{name} from {number(ok[0])} to {number(ok[-1])}"
    return f"{name}: {len(y)} points from {number(ok.min())} to {number(ok.max())}"


def _lines(fig: go.Figure, traces: list) -> str:
    parts = [p for i, t in enumerate(traces) if (p := _curve(t, i)) is not None]
    if not parts:
        return "no values"
    xs = np.concatenate([_numbers(t.x) for t in traces])
    xs = xs[np.isfinite(xs)]
    over = (f" over {_axis_name(fig, traces[0], 'x', 'x')} {number(xs.min())} to {number(xs.max())}"
            if len(xs) > 1 and xs.min() < xs.max() else "")
    more = f"; and {len(parts) - NAMED} more" if len(parts) > NAMED else ""
    head = f"{len(parts)} curve{'s' if len(parts) > 1 else ''}{over}: "
    return head + "; ".join(parts[:NAMED]) + more


def _bounded(sentence: str) -> str:
    if len(sentence) <= LIMIT:
        return sentence
    cut = sentence[:LIMIT - 1]
    return (cut[:cut.rfind(" ")] if " " in cut[LIMIT // 2:] else cut).rstrip(" ;,:") + "…"


def is_underlay(trace) -> bool:
    """A grey layer beneath a heatmap that marks its blocked cells ("masked", "future"): one colour at both ends."""
    scale = trace.colorscale
    one_colour = isinstance(scale, (list, tuple)) and len(scale) > 0 and len({str(c[1]).lower() for c in scale}) == 1
    return (trace.name or "").endswith("masked") or one_colour


def summary(fig: go.Figure) -> str:
    """One plain-text sentence (at most LIMIT characters) that says what the figure shows, from its data."""
    title = text(fig.layout.title.text)
    traces = list(fig.data)
    heat = [t for t in traces if t.type == "heatmap" and not is_underlay(t)]
    bars = [t for t in traces if t.type == "bar"]
    lines = [t for t in traces if t.type in ("scatter", "scattergl")]
    parts = ([_heatmaps(fig, heat)] if heat else []) + ([_bars(fig, bars)] if bars else []) + \
            ([_lines(fig, lines)] if lines else [])
    if not title and not heat:
        title = _axis_name(fig, traces[0], "y", "") if traces else ""
    if not parts:
        parts = [f"{len(traces)} {traces[0].type} trace{'s' if len(traces) > 1 else ''}" if traces else "no data"]
    body = "; ".join(parts)
    joint = " — " if ":" in title else ": "  # "Layer 0 · head 0: attention weights — the largest ..."
    sentence = f"{title}{joint}{body}" if title else body[:1].upper() + body[1:]
    return _bounded(sentence.rstrip(".") + ".")
