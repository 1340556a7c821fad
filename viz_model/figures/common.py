"""Helpers every figure uses: safe token labels, tensor -> numpy, shared styling."""

from __future__ import annotations

import functools
import html
import re
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


# -- long texts on a phone (#42 item 4) ---------------------------------------------------------------------------
# Plotly never wraps a title and the server does not know the screen, so a chart's long texts are broken between
# words to fit the narrowest screen it is drawn on: a 390 px phone, where a chart is 358 px wide. A text that fits
# there is left as it is; a longer one is balanced over as few lines as fit (on a laptop: two even lines, not one).
PHONE_CHART_PX = 358  # a chart's width on a 390 x 844 phone (measured: Streamlit's page padding taken off)
Y_LABELS_PX, COLORBAR_PX = 75, 75  # what a phone's chart gives its y axis's labels and title, and a colour bar
X_LABELS_PX = 30  # and its x axis's tick labels
LINE_EM, CAP_EM = 1.3, 0.7  # plotly.js's LINE_SPACING, and CAP_SHIFT: how far it lowers a one-line title
PLOTLY_HEIGHT = 450         # a figure's height when its layout says none (Streamlit's and Plotly's default)
# A character's width in font sizes, fitted to 206 chart texts as Chromium drew them (within 7 % for 9 in 10 texts;
# one width for every character was 15 % off): wide letters, narrow signs, capitals, digits, small letters, the
# rest (symbols, Greek); bold is 10 % wider, and 5 % is added for a phone's own sans, a little wider.
_WIDE, _NARROW = set("WMmw@%"), set("iljIft.,:;!|'()[]· ")
SLACK, BOLD = 1.05, 1.1
_BR = re.compile(r"(<br\s*/?>)", re.I)
_TAG = re.compile(r"<(/?)[a-z]+(?:\s[^<>]*)?/?>", re.I)
_SIGN = re.compile(r"[^\w(\[]+")  # a lone sign ("·", "=", "→") stays with the word before it,
_NUMBER = re.compile(r"[\d.,]+\W?")  # and so does a number ("layer 0"), unless that word ends a clause ("self:")
_ENDS_WELL = ",:;·)—–"  # a line ends best after one of these


def shown_text(text: str) -> str:
    """What a Plotly text shows: its tags are not shown, an entity (&lt;) is one character."""
    return html.unescape(_TAG.sub("", text))


def text_px(text: str, size: float, bold: bool = False) -> float:
    """About how wide a Plotly text (one line) is drawn at a font size of `size` px."""
    ems = sum(0.8 if c in _WIDE else 0.3 if c in _NARROW else 0.58 if c.isupper() else 0.52 if c.isdigit()
              else 0.5 if c.isascii() and c.isalpha() else 0.45 for c in shown_text(text))
    return ems * size * SLACK * (BOLD if bold else 1.0)


def _words(line: str) -> list[str]:
    """A line's words: split at the spaces outside any tag pair (<sub>a b</sub> stays one word); tags and entities
    (a student's "<b>" arrives as "&lt;b&gt;") are never cut."""
    words, cur, depth = [], "", 0
    for part in re.split(r"(<[^<>]*>)", line):
        tag = _TAG.fullmatch(part)
        if tag or depth:
            if tag and not part.endswith("/>"):
                depth = max(0, depth + (-1 if tag.group(1) else 1))
            cur += part
            continue
        first, *rest = part.split(" ")
        cur += first
        for word in rest:
            words.append(cur)
            cur = word
    return [w for w in [*words, cur] if w]


def _units(words: list[str], fits) -> list[str]:
    """Words glued to the word before where a break would read badly ("layer 0", "head 3 ·", "m ="; not after
    punctuation: "self:" then "7 × 7"), as many of a glued run as `fits` a line (a sign always)."""
    runs: list[list[str]] = []
    for w in words:
        if runs and (_SIGN.fullmatch(shown_text(w)) or _NUMBER.fullmatch(shown_text(w))
                     and not _ends_well(runs[-1][-1])):
            runs[-1].append(w)
        else:
            runs.append([w])
    units = []
    for run in runs:
        units.append(run[0])
        for w in run[1:]:  # a sign stays on its word's line even where it sticks out
            if fits(f"{units[-1]} {w}") or _SIGN.fullmatch(shown_text(w)):
                units[-1] = f"{units[-1]} {w}"
            else:
                units.append(w)
    return units


def _ends_well(word: str) -> bool:
    return shown_text(word)[-1:] in tuple(_ENDS_WELL)


def _balanced(units: list[str], measure, px: float) -> list[int]:
    """Where lines start (unit indices) to set `units` in as few lines no wider than `px` as greedy filling takes,
    the lines as even as possible, preferring to end a line after punctuation."""
    count, start = 1, 0
    for i in range(1, len(units)):
        if measure(" ".join(units[start:i + 1])) > px:
            count, start = count + 1, i
    span = len(units)
    target, penalty = measure(" ".join(units)) / count, (0.3 * px) ** 2

    def cost(a: int, b: int) -> float:
        length = measure(" ".join(units[a:b]))
        if length > px and b - a > 1:
            return float("inf")
        return (length - target) ** 2 + (0 if b == span or _ends_well(units[b - 1]) else penalty)

    best = {(0, 0): (0.0, [])}  # (lines, units set) -> (cost, starts)
    for lines in range(1, count + 1):
        for b in range(lines, span + 1):
            options = [(best[lines - 1, a][0] + cost(a, b), best[lines - 1, a][1] + [a])
                       for a in range(lines - 1, b) if (lines - 1, a) in best]
            if options:
                best[lines, b] = min(options, key=lambda o: o[0])
    return best[count, span][1]


def wrap_text(text: str, px: float, size: float, bold: bool = False) -> str:
    """`text` with "<br>" between words so that, drawn at a font size of `size` px, no line is wider than `px` (a
    word wider than that gets a line of its own), in as few lines as that takes, balanced. The "<br>"s already in it
    stay; a line that fits is not changed, so wrapping twice is wrapping once."""
    def measure(s: str) -> float:
        return text_px(s, size, bold)

    parts = _BR.split(text or "")
    for i in range(0, len(parts), 2):
        if measure(parts[i]) > px:
            units = _units(_words(parts[i]), lambda s: measure(s) <= px)
            if len(units) > 1:
                starts = _balanced(units, measure, px) + [len(units)]
                parts[i] = "<br>".join(" ".join(units[a:b]) for a, b in zip(starts, starts[1:]))
    return "".join(parts)


def _font_size(layout: dict, node: dict | None, *path: str, default: float) -> float:
    """The font size a text is drawn at: its own (`node`'s font), else the template's at `path`, else `default`."""
    size = ((node or {}).get("font") or {}).get("size")
    spec = ((layout.get("template") or {}).get("layout") or {})
    for key in path:
        spec = spec.get(key) or {} if isinstance(spec, dict) else {}
    return float(size or (spec.get("font") or {}).get("size") or default)


def _lines(text: str) -> int:
    return len(_BR.findall(text or "")) + 1


def _phone_plot_px(fig: dict, layout: dict) -> float:
    """About how wide the plot area of this figure is on a phone: the chart less its right margin, the y axis's
    labels and title, and a colour bar where a trace shows one (measured: 199-315 px)."""
    scale = any(t.get("showscale", t.get("type") in ("heatmap", "contour", "histogram2d"))
                or (t.get("marker") or {}).get("showscale") for t in fig.get("data") or [])
    return PHONE_CHART_PX - Y_LABELS_PX - (layout.get("margin") or {}).get("r", 80) - (COLORBAR_PX if scale else 0)


def _fit_panel_titles(layout: dict, base: float, plot_px: float) -> float:
    """Wrap the panel titles (annotations centred on the plot's top edge, as panel_row and make_subplots place them)
    to the room between their neighbours' centres on a phone. Returns the pixels their tallest one grew by."""
    notes = list(layout.get("annotations") or [])
    top = [i for i, a in enumerate(notes) if a.get("showarrow") is False and a.get("xref") == "paper"
           and a.get("yref") == "paper" and a.get("yanchor") == "bottom" and a.get("xanchor") in ("center", None)
           and isinstance(a.get("x"), float | int) and float(a.get("y", 0)) >= 0.98 and a.get("text")]
    xs = sorted(float(notes[i]["x"]) for i in top)
    grown = 0.0
    for i in top:
        a, x = notes[i], float(notes[i]["x"])
        left, right = [c for c in xs if c < x], [c for c in xs if c > x]
        room = min((x - left[-1]) / 2 if left else x + 0.03, (right[0] - x) / 2 if right else 1 - x)
        size = _font_size(layout, a, "annotationdefaults", default=base)
        text = wrap_text(a["text"], 2 * room * plot_px, size)
        if text != a["text"]:
            notes[i] = {**a, "text": text}
            grown = max(grown, (_lines(text) - _lines(a["text"])) * LINE_EM * size)
    if grown:
        layout["annotations"] = notes
    return grown


def _legend_below_px(fig: dict, layout: dict) -> float:
    """About how tall a legend under the plot is on a phone: a row for every two entries."""
    legend = layout.get("legend") or {}
    if legend.get("orientation") != "h" or float(legend.get("y", 1)) >= 0 or layout.get("showlegend") is False:
        return 0.0
    entries = sum(1 for t in fig.get("data") or [] if t.get("name") and t.get("showlegend") is not False)
    return 22.0 * -(-entries // 2)


def _fit_axis_titles(fig: dict, layout: dict, base: float, plot_px: float) -> float:
    """Wrap an axis title longer than its axis on a phone: an x axis as wide as its share of the plot area, then a
    y axis as tall as its share of the plot's height (the figure's less its margins, an x axis's labels and title
    below it and a legend below). Returns the pixels an x axis on top grew by (it grows up, towards the title)."""
    margin = layout.get("margin") or {}
    axes = sorted((k for k in layout if re.fullmatch(r"[xy]axis\d*", k)), key=lambda k: k[0] != "x")
    under = any(isinstance(layout[k], dict) and layout[k].get("side") != "top" for k in axes if k[0] == "x")
    plot_h = (layout.get("height") or PLOTLY_HEIGHT) - margin.get("t", 100) - margin.get("b", 80) \
        - (X_LABELS_PX if under else 0) - _legend_below_px(fig, layout)
    grown = below = 0.0
    for name in axes:
        ax = layout[name]
        title = ax.get("title") if isinstance(ax, dict) else None
        if not isinstance(title, dict) or not title.get("text"):
            continue
        lo, hi = ax.get("domain") or [0, 1]
        size = _font_size(layout, title, name[:5], "title", default=round(1.2 * base))
        px = (hi - lo) * (plot_px if name[0] == "x" else max(plot_h - below, 100))
        text = wrap_text(title["text"], px, size)
        if name[0] == "x" and ax.get("side") != "top":
            below = max(below, _lines(text) * LINE_EM * size)
        if text != title["text"]:
            layout[name] = {**ax, "title": {**title, "text": text}}
            if name[0] == "x" and ax.get("side") == "top":
                grown = max(grown, (_lines(text) - _lines(title["text"])) * LINE_EM * size)
    return grown


def _pinned(title: dict, top: float, height: float, size: float, wrapped: str) -> dict:
    """The title with its first line kept where Plotly drew it before the top margin grew: an unpinned title sits
    in the middle of the top margin and would move down onto the panel titles. Anchored at the top, plotly.js lowers
    a one-line title by CAP_EM and draws a multi-line one from its first line's baseline (measured in Chromium)."""
    y = title.get("y", "auto")
    if y == "auto" or y is None:
        baseline = top / 2
    else:  # pinned by its factory (layout_dict's title_top): its baseline as drawn
        single = _lines(title.get("text", "")) == 1 and title.get("yanchor") == "top"
        baseline = (1 - float(y)) * height + (CAP_EM * size if single else 0)
    pad = baseline - (CAP_EM * size if _lines(wrapped) == 1 else 0)
    return {**title, "text": wrapped, "y": 1, "yref": "container", "yanchor": "top",
            "pad": {**(title.get("pad") or {}), "t": round(max(pad, 0), 1)}}


def fit_texts(fig: dict) -> dict:
    """A figure's dict (as to_dict() gives it) with its long texts wrapped to fit a phone's chart: the title, the
    panel titles and the axis titles (wrap_text, at widths from the font sizes). The top margin grows by the lines
    the title and the panel titles gained, and the height with it, so the plot keeps its size. Returns a new dict;
    `fig` and the dicts in it are not changed (a cached figure's dict is every session's)."""
    if not fig.get("layout"):
        return fig
    layout = dict(fig["layout"])
    base = _font_size(layout, layout, default=12)
    title = layout.get("title")
    title = {"text": title} if isinstance(title, str) else title
    text = (title or {}).get("text") or ""
    size = _font_size(layout, title, "title", default=round(1.4 * base))
    wrapped = wrap_text(text, PHONE_CHART_PX - 8, size, bold=True)
    plot_px = _phone_plot_px(fig, layout)
    grown = (_lines(wrapped) - _lines(text)) * LINE_EM * size + _fit_panel_titles(layout, base, plot_px) \
        + _fit_axis_titles(fig, layout, base, plot_px)
    if grown:
        margin = layout.get("margin") or {}
        top, height = margin.get("t", 100), layout.get("height") or PLOTLY_HEIGHT
        if text:
            layout["title"] = _pinned(title, top, height, size, wrapped)
        layout["margin"] = {**margin, "t": round(top + grown)}
        layout["height"] = round(height + grown)
    return {**fig, "layout": layout}
