"""Colour accessibility of the figures (#29): categorical colours stay apart under the three dichromacies, scales keep
their lightness order, chart text has WCAG contrast, and masked cells are marked by text, not by colour alone.

Bounds, in CIEDE2000 (viz_model.figures.colour.delta_e):
- DISTINCT = 10 for colours that can appear side by side. ΔE00 ≈ 1 is a just-noticeable difference between large
  patches; lines, bars and markers are small and named in a legend, and Szafir (2017, "Modeling Color Difference for
  Visualization Design") measured that small marks need several times the large-patch difference. 10 is the usual
  "different colour at a glance" floor of colour tables (6–12 "large change", above 12 "different colour").
- ENDS = 20 between the two ends of a diverging scale: they mean opposite signs, twice the categorical floor.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from conftest import plotly_array
from test_figures_roundtrip import CAUSAL, SAMPLES, TOKENS, probs

from viz_model.figures import (
    common,
    cost,
    encoder,
    encoder_decoder,
    generate,
    normalization,
    qkv,
    recurrence,
    rope,
    train,
)
from viz_model.figures.attention import attention_heatmap
from viz_model.figures.colour import (
    CVD_KINDS,
    contrast_ratio,
    delta_e,
    delta_e_lab,
    hex_to_rgb,
    simulate_cvd,
    srgb_to_lab,
    to_rgb,
)
from viz_model.figures.export import presenter_style

array_of = plotly_array

VISIONS = ("normal", *CVD_KINDS)
DISTINCT = 10.0
ENDS = 20.0
AA, AAA = 4.5, 7.0  # WCAG 2.x minimum contrast for normal-size text; the enhanced level, asked of presenter mode
PLOTLY_DARK = "#444444"  # plotly.js Color.defaultLine: the dark text it picks on a light label or cell


# --- the helper itself --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fg, bg, ratio", [("#000", "#fff", 21.0), ("#ffffff", "#000000", 21.0), ("#fff", "#fff", 1.0),
                                           ("#777", "#fff", 4.478), ("#767676", "#ffffff", 4.542),
                                           ("rgb(0, 0, 255)", "#fff", 8.592), ("#31333F", "white", 12.531)])
def test_contrast_ratio_matches_known_wcag_values(fg, bg, ratio):
    assert contrast_ratio(fg, bg) == pytest.approx(ratio, abs=1e-3)
    assert contrast_ratio(bg, fg) == pytest.approx(ratio, abs=1e-3)  # symmetric


def test_colour_strings_are_parsed_and_rgba_is_composited_over_the_background():
    assert hex_to_rgb("#0072B2") == (0, 114, 178) and hex_to_rgb("#abc") == hex_to_rgb("#aabbcc")
    np.testing.assert_allclose(to_rgb("rgb(255, 0, 128)"), [1.0, 0.0, 128 / 255])
    np.testing.assert_allclose(to_rgb("rgba(0, 0, 0, 0.5)"), [0.5, 0.5, 0.5])               # half black on white
    np.testing.assert_allclose(to_rgb("rgba(255,255,255,0.5)", "#000"), [0.5, 0.5, 0.5])    # half white on black
    assert contrast_ratio("rgba(0,0,0,0.5)", "#fff") == pytest.approx(3.977, abs=1e-3)
    with pytest.raises(ValueError):
        hex_to_rgb("#12345")


@pytest.mark.parametrize("colour, kind, expected", [
    ("#ff0000", "protanopia", (108.79, 95.03, 0.0)),     # column 1 of the protanopia matrix: 0.152286, 0.114503, <0
    ("#00ff00", "deuteranopia", (238.69, 214.01, 58.44)),  # column 2 of deuteranopia: 0.860646, 0.672501, 0.042940
    ("#0000ff", "tritanopia", (0.0, 107.2, 149.76)),     # column 3 of tritanopia: <0, 0.147602, 0.303900
])
def test_simulate_cvd_applies_machado_2009_to_linear_rgb(colour, kind, expected):
    """A primary picks out one column of the matrix; each value is sRGB-encoded after clipping to [0, 1]."""
    np.testing.assert_allclose(255 * simulate_cvd(colour, kind), expected, atol=0.01)


@pytest.mark.parametrize("kind", CVD_KINDS)
def test_simulated_greys_stay_grey(kind):
    for grey in ("#000000", "#777777", "#ffffff"):  # each matrix row sums to 1: neutrals are unchanged
        np.testing.assert_allclose(simulate_cvd(grey, kind), to_rgb(grey), atol=1e-3)


@pytest.mark.parametrize("lab1, lab2, de", [  # Sharma, Wu & Dalal (2005), CIEDE2000 test data, pairs 1, 4, 7, 9,
    ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),    # 11, 15, 17 and 20 (hue wrap-around, greys, blues)
    ((50, -1.3802, -84.2814), (50, 0, -82.7485), 1.0),
    ((50, 0, 0), (50, -1, 2), 2.3669),
    ((50, 2.49, -0.001), (50, -2.49, 0.0009), 7.1792),
    ((50, 2.49, -0.001), (50, -2.49, 0.0011), 7.2195),
    ((50, -0.001, 2.49), (50, 0.0011, -2.49), 4.7461),
    ((50, 2.5, 0), (73, 25, -18), 27.1492),
    ((50, 2.5, 0), (58, 24, 15), 19.4535),
])
def test_delta_e_is_ciede2000(lab1, lab2, de):
    assert float(delta_e_lab(lab1, lab2)) == pytest.approx(de, abs=1e-4)


def test_lab_of_white_and_black():
    np.testing.assert_allclose(srgb_to_lab("#ffffff"), [100, 0, 0], atol=1e-3)
    np.testing.assert_allclose(srgb_to_lab("#000000"), [0, 0, 0], atol=1e-6)
    assert delta_e("#000", "#fff") == pytest.approx(100.0, abs=1e-3)


# --- categorical colours ------------------------------------------------------------------------------------------

# Every hard-coded set of category colours, as it appears together: a palette used in order with all the colours a
# figure can cycle through; a lookup with its fallback; fixed sets with what shares their axes.
PALETTES = {
    "common.COLORWAY (first 7; its yellow is fill-only)": common.COLORWAY[:7],
    "train.PALETTE": train.PALETTE,
    "cost.KIND_COLORS and its fallback": (*cost.KIND_COLORS.values(), "#444444"),
    "cost.KV_COLORS": cost.KV_COLORS,
    "recurrence.KIND_COLORS and its fallback": (*recurrence.KIND_COLORS.values(), "#444444"),
    "normalization.PALETTE": normalization.PALETTE,
    "normalization group outlines": (normalization.HIGHLIGHT, normalization.GROUP_LINE),
    "qkv.SERIES": qkv.SERIES,
    "qkv self-attention bars and the even-spread line": (*qkv.SERIES[:2], "grey"),
    "qkv score bars": (qkv.POSITIVE, qkv.NEGATIVE, common.MASKED_COLOR),
    "qkv weight bars": (qkv.WEIGHT, common.MASKED_COLOR),
    "qkv lowest loss": (qkv.SERIES[2], qkv.WEIGHT),
    "encoder bars": (encoder.FILL, encoder.ANSWER, common.MASKED_COLOR),
    "encoder_decoder alignment markers": (encoder_decoder.ALIGNED, encoder_decoder.PEAK),
    "generate bars": (generate.KEPT, generate.REMOVED, generate.CHOSEN),
    "rope arrows": (rope.Q_COLOR, rope.K_COLOR),
}


def worst_pair(colours, kind: str) -> tuple[float, str, str]:
    return min((delta_e(a, b, kind), a, b) for a, b in combinations(dict.fromkeys(colours), 2))


@pytest.mark.parametrize("kind", VISIONS)
@pytest.mark.parametrize("name", sorted(PALETTES))
def test_palette_colours_stay_distinct(name, kind):
    de, a, b = worst_pair(PALETTES[name], kind)
    assert de >= DISTINCT, f"{name} under {kind}: {a} and {b} are ΔE00 {de:.1f} apart"


def mark_colours(fig: go.Figure) -> dict[tuple[str, str], list[str]]:
    """The line and marker colours of a figure's bars and scatters, per pair of axes (marks on other panels are never
    side by side). Heatmaps are scales, tested below."""
    groups: dict[tuple[str, str], list[str]] = {}
    for t in fig.data:
        if t.type not in ("scatter", "bar"):
            continue
        found = [t.marker.color, t.marker.line.color] + ([t.line.color] if t.type == "scatter" else [])
        for c in found:
            for one in ([c] if isinstance(c, str) else list(c) if isinstance(c, (list, tuple)) else []):
                if isinstance(one, str):
                    groups.setdefault((t.xaxis or "x", t.yaxis or "y"), []).append(one)
    return groups


# A factory whose sample passes colours of its own: drawn here with the figure's defaults (the colours a page passes
# are the page's to test; ui/normalization.py's COLORS is checked below)
OWN_COLOURS = {"normalization.per_layer_chart": lambda: normalization.per_layer_chart(
    [dict(name="a", y=[1.0, 2.0]), dict(name="b", y=[2.0, 1.0], dash="dash")], y_title="y", title="t")}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_colours_that_share_a_panel_stay_distinct(name):
    """The colours each factory actually draws (its literals too), panel by panel, under every colour vision."""
    fig = OWN_COLOURS.get(name, SAMPLES[name])()
    for axes, colours in mark_colours(fig).items():
        if len(set(colours)) < 2:
            continue
        for kind in VISIONS:
            de, a, b = worst_pair(colours, kind)
            assert de >= DISTINCT, f"{name} {axes} under {kind}: {a} and {b} are ΔE00 {de:.1f} apart"


# --- scales -------------------------------------------------------------------------------------------------------

def scale_lightness(scale: str, kind: str, n: int = 65) -> tuple[np.ndarray, list[str]]:
    colours = pc.sample_colorscale(scale, list(np.linspace(0, 1, n)))
    return srgb_to_lab(simulate_cvd(np.array([to_rgb(c) for c in colours]), kind))[:, 0], colours


@pytest.mark.parametrize("kind", VISIONS)
@pytest.mark.parametrize("scale", [common.SEQUENTIAL, "Cividis"])  # Cividis: presenter mode's sequential scale
def test_sequential_scale_lightness_rises_monotonically(scale, kind):
    L, _ = scale_lightness(scale, kind)
    assert (np.diff(L) > 0).all(), f"{scale} under {kind}: L* falls at {np.flatnonzero(np.diff(L) <= 0)}"
    assert L[-1] - L[0] > 60  # dark to light: the order reads even in grey


@pytest.mark.parametrize("kind", VISIONS)
@pytest.mark.parametrize("scale", [common.DIVERGING, "PuOr_r"])  # PuOr_r: presenter mode's diverging scale
def test_diverging_scale_ends_differ_and_each_half_lightens_to_the_centre(scale, kind):
    L, colours = scale_lightness(scale, kind)
    mid = len(L) // 2
    assert (np.diff(L[: mid + 1]) > 0).all() and (np.diff(L[mid:]) < 0).all()
    assert delta_e(colours[0], colours[-1], kind) >= ENDS


def test_presenter_mode_swaps_to_the_scales_tested_here():
    fig = presenter_style(go.Figure(attention_heatmap(probs(), TOKENS, allowed=CAUSAL)))  # as ui/chart.py calls it
    cividis = go.Heatmap(colorscale="Cividis").colorscale
    assert tuple(fig.data[-1].colorscale) == tuple(cividis)


# --- chart text ---------------------------------------------------------------------------------------------------

def template_layout() -> dict:
    return pio.templates[common.TEMPLATE].to_plotly_json()["layout"]


def template_text_colours(layout: dict) -> dict[str, str]:
    return {"font": layout["font"]["color"], "title": layout["title"]["font"]["color"],
            "x ticks": layout["xaxis"]["tickfont"]["color"], "y ticks": layout["yaxis"]["tickfont"]["color"],
            "hover": layout["hoverlabel"]["font"]["color"]}


def test_template_text_has_aa_contrast_and_aaa_in_presenter_mode():
    layout = template_layout()
    backgrounds = {"paper": layout["paper_bgcolor"], "plot": layout["plot_bgcolor"]}
    for what, colour in template_text_colours(layout).items():
        bgs = {"hover": layout["hoverlabel"]["bgcolor"]} if what == "hover" else backgrounds
        for where, bg in bgs.items():
            assert contrast_ratio(colour, bg) >= AAA, f"{what} {colour} on {where} {bg}"  # AAA implies AA
    # presenter_style enlarges fonts and swaps scales; the colours it leaves are the template's
    fig = presenter_style(go.Figure(attention_heatmap(probs(), TOKENS, allowed=CAUSAL)))
    full = fig.to_dict()["layout"]
    for key in ("font", "title", "hoverlabel"):
        assert "color" not in full.get(key, {}).get("font", full.get(key, {})), key


def text_colours(node, path: str = "") -> list[tuple[str, str]]:
    """(path, colour) of every font colour set in a figure dict (template included), per-point lists flattened."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("font") and isinstance(v, dict) and v.get("color") is not None:
                cs = v["color"] if isinstance(v["color"], list) else [v["color"]]
                found += [(f"{path}.{k}", c) for c in dict.fromkeys(cs) if isinstance(c, str)]
            found += text_colours(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += text_colours(v, f"{path}[{i}]")
    return found


def heatmap_cell_colours(t) -> np.ndarray:
    """The colour of each heatmap cell that carries text (sRGB rows), from its z, zmin/zmax and colour scale."""
    z = array_of(t.z).astype(float)
    text = array_of(t.text).astype(object) if t.text is not None else np.full(z.shape, "x", dtype=object)
    lo = t.zmin if t.zmin is not None else np.nanmin(z)
    hi = t.zmax if t.zmax is not None else np.nanmax(z)
    where = ~np.isnan(z) & (text != "")
    u = np.clip((z[where] - lo) / ((hi - lo) or 1.0), 0, 1)
    # blended per channel between the stops in sRGB, as plotly.js does (sample_colorscale cannot mix hex and rgb())
    stops = np.array([float(s) for s, _ in t.colorscale])
    rgb = np.array([to_rgb(c) for _, c in t.colorscale])
    return np.stack([np.interp(u, stops, rgb[:, i]) for i in range(3)], axis=-1)


def backgrounds_of(fig: go.Figure, path: str) -> list:
    """What a font at `path` is drawn on: a heatmap's text on its cells, a bar's (when it may sit inside) on the bar
    and the plot, a hover label on its label, everything else on the paper and the plot (annotations sit on both)."""
    layout = fig.layout
    paper = layout.paper_bgcolor or layout.template.layout.paper_bgcolor
    plot = layout.plot_bgcolor or layout.template.layout.plot_bgcolor
    if "hoverlabel" in path:
        return [layout.hoverlabel.bgcolor or layout.template.layout.hoverlabel.bgcolor]
    if path.startswith(".data["):
        t = fig.data[int(path[6:path.index("]")])]
        if t.type == "heatmap":
            return list(heatmap_cell_colours(t))
        if t.type == "bar" and t.textposition != "outside" and "outsidetextfont" not in path:
            bars = t.marker.color if isinstance(t.marker.color, (list, tuple)) else [t.marker.color]
            return [plot, *[c for c in bars if isinstance(c, str)]]
        return [plot]
    if path.startswith(".layout.annotations"):
        return [paper, plot]
    return [paper]


def explicit_text_contrasts(fig: go.Figure) -> list[tuple[float, str, str]]:
    out = []
    for path, colour in text_colours(fig.to_dict()):
        path = path.replace(".layout.template.layout.", ".layout.", 1)  # the template's layout styles this layout
        for bg in backgrounds_of(fig, path):
            out.append((contrast_ratio(colour, bg), path, colour))
    return out


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_text_colour_a_figure_sets_has_contrast(name, presenter):
    """AA for every font colour in the figure dict (the template's too: presenter mode must keep them AAA, above), on
    what it is drawn on. qkv.score_panels' #111111 on its darkest cells is the lowest: 5.07:1, AA but not AAA."""
    fig = SAMPLES[name]()
    fig = presenter_style(go.Figure(fig)) if presenter else fig
    worst = min(explicit_text_contrasts(fig))
    assert worst[0] >= AA, f"{name}: {worst[2]} at {worst[1]} has {worst[0]:.2f}:1"


def plotly_auto_text(bg) -> str:
    """The text colour plotly.js (3.x Color.contrast) picks on a label or cell with no font colour: white where white
    has the higher WCAG contrast against it, else its dark grey #444."""
    return "#ffffff" if contrast_ratio(bg, "#ffffff") > contrast_ratio(bg, PLOTLY_DARK) else PLOTLY_DARK


# --- masked cells: text, not colour alone -------------------------------------------------------------------------

def test_masked_cells_carry_a_cross_on_exactly_the_masked_cells():
    p = probs()
    fig = attention_heatmap(p, TOKENS, allowed=CAUSAL)
    grey = next(t for t in fig.data if t.name == "masked")
    att = next(t for t in fig.data if t.name == "attention")
    cross = np.asarray(grey.text) == "×"
    assert (cross == ~CAUSAL).all()                                    # × on every masked cell and nowhere else
    assert (np.asarray(att.text)[~CAUSAL] == "").all()                 # the value layer prints nothing over them
    assert np.isnan(np.asarray(att.z, dtype=float)[~CAUSAL]).all()    # ... and is a hole there, so the × shows
    assert grey.texttemplate == "%{text}" and all(c == common.MASKED_COLOR for _, c in grey.colorscale)
    # the × has no font colour of its own: Plotly picks one against the grey cell
    x_colour = (grey.textfont.color if grey.textfont and grey.textfont.color else plotly_auto_text(common.MASKED_COLOR))
    assert contrast_ratio(x_colour, common.MASKED_COLOR) >= AA


def test_masked_grey_stays_apart_from_the_attention_scales():
    """Where cells are too small for the × (more than 16 tokens, the head grids) the grey alone says "masked" (and the
    hover). Tritanopia brings it to ΔE00 9.3 of Viridis's yellow-green end: stated here as 8, with the reason that
    such a cell also differs in hover text; the other visions keep DISTINCT."""
    for scale in (common.SEQUENTIAL, "Cividis"):
        colours = pc.sample_colorscale(scale, list(np.linspace(0, 1, 101)))
        for kind in VISIONS:
            de = min(delta_e(common.MASKED_COLOR, c, kind) for c in colours)
            assert de >= (8.0 if kind == "tritanopia" else DISTINCT), f"{scale} under {kind}: {de:.1f}"


def test_normalization_page_colours_stay_distinct():
    from viz_model.ui.normalization import COLORS

    for pair in ((COLORS["pre"], COLORS["post"]), (COLORS[True], COLORS[False])):  # the pairs drawn together
        for kind in VISIONS:
            assert worst_pair(pair, kind)[0] >= DISTINCT, (pair, kind)


def test_numbers_on_heatmap_cells_are_black_or_white_per_cell_with_aa_contrast():
    """#29: plotly.js colours a heatmap's numbers itself (white or #444, as little as 3.1:1 on mid-scale cells), one
    colour per trace. readable_numbers (applied to every chart the app draws and exports) hides them and prints each
    cell's number again in black or white, whichever has the higher contrast on that cell."""
    from viz_model.figures.export import readable_numbers

    worst, before, checked = [], [], 0
    for name in sorted(SAMPLES):
        for fig in (go.Figure(SAMPLES[name]()), presenter_style(go.Figure(SAMPLES[name]()))):
            plain = [t for t in fig.data
                     if t.type == "heatmap" and t.text is not None and t.texttemplate and not t.textfont.color]
            before += [contrast_ratio(plotly_auto_text(c), c) for t in plain for c in heatmap_cell_colours(t)]
            texts = {t.name: array_of(t.text).astype(object).copy() for t in plain}
            fixed = readable_numbers(go.Figure(fig))
            for t in fixed.data[:len(fig.data)]:
                if t.name in texts:  # hidden, still in the data
                    assert t.textfont.color == "rgba(0,0,0,0)"
                    assert (array_of(t.text).astype(object) == texts[t.name]).all()
            for t in fixed.data[len(fig.data):]:  # the overlays: the same numbers, one text colour each
                base = next(b for b in plain if t.name == f"{b.name} · numbers")
                cells = heatmap_cell_colours(base)  # the colours of the base's cells that carry text, row-major
                mask = ~np.isnan(array_of(base.z).astype(float)) & (array_of(base.text).astype(object) != "")
                drawn = ~np.isnan(array_of(t.z).astype(float))
                worst += [contrast_ratio(t.textfont.color, c) for c in cells[drawn[mask]]]
                assert (array_of(t.text).astype(object)[drawn] == texts[base.name][drawn]).all()
                checked += int(drawn.sum())
    assert min(before) < AA  # what plotly.js alone gave
    assert checked > 100 and min(worst) >= 4.58 - 1e-3, min(worst)


def test_numbers_on_a_heatmap_without_its_own_scale_are_left_to_plotly():
    """A heatmap coloured by the layout's scale (no colorscale of its own) is drawn as plotly.js draws it, unchanged:
    readable_numbers cannot know its cell colours, and must not fail on it."""
    from viz_model.figures.export import readable_numbers

    fig = go.Figure(go.Heatmap(z=[[0.1, 0.9]], text=[["a", "b"]], texttemplate="%{text}"))
    out = readable_numbers(go.Figure(fig))
    assert len(out.data) == 1 and not out.data[0].textfont.color
