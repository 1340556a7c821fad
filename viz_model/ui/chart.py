"""One way to put a figure on a page: presenter styling, its text alternative, slide-ready PNG or vector SVG, HTML and
CSV exports, and its numbers as a table."""

from __future__ import annotations

import copy
import functools
import threading

import plotly.graph_objects as go
import streamlit as st
from plotly.basedatatypes import BaseFigure

from viz_model.figures.common import fit_texts, png_config
from viz_model.figures.describe import is_underlay, summary, text
from viz_model.figures.export import figure_csv, figure_html, figure_tables, presenter_style, readable_numbers
from viz_model.model_text import md_text
from viz_model.ui.presenter import presenter_on
from viz_model.ui.widgets import answer_hidden, hidden_chart


def show(fig: go.Figure, *, key: str, name: str | None = None, exports: bool = True, toolbar: bool = True,
         container=None, **kwargs):
    """st.plotly_chart with the app's conventions. `name` names the exported files (defaults to key).

    Every chart says what it shows in one sentence computed from its data (figures.describe.summary): the chart's
    accessible name (alt) and a caption under it, for everyone. `container` (a column, tab...) is where to draw;
    exports=False for charts a live fragment redraws every second (no popovers; the sentence still); toolbar=False
    hides Plotly's modebar where a narrow chart has no room for it (the sidebar's: it covered the title on hover).
    """
    name = name or key
    target = container if container is not None else st
    if answer_hidden(key):  # #39: a class question's answer, hidden on a student's screen until Reveal
        return hidden_chart(fig, key, target, exports)
    words = _summary(fig)
    if presenter_on():
        fig = _presenter(fig)
    kwargs.setdefault("alt", words)
    # theme=None: the figure's own template (figures.common.TEMPLATE) is what the student sees; see its comment
    config = {**png_config(name, scale=4 if presenter_on() else 3), **({} if toolbar else {"displayModeBar": False})}
    config["toImageButtonOptions"]["format"] = st.session_state.get(IMAGE_FORMAT, "png")  # the Export popover's pick
    event = target.plotly_chart(_Serialized(fig), key=key, config=config, theme=None, **kwargs)
    target.caption(f"In words: {md_text(words)}")
    if exports:
        row = target.container(horizontal=True, gap="small")
        _data_table(row, fig, key)
        _export_buttons(row, fig, key, name)
    return event


# A cached figure is one object for every session, and Plotly builds a fast_figure's trace objects from its dicts on
# the first read of .data (popping keys as it goes): two sessions reading a new figure at once failed with
# KeyError('type') or "dictionary changed size" (class mode's bench, 60 followers). The first reads of a figure, its
# summary and its dict, take this lock; once both are kept on the figure, reads are plain reads.
_FIRST_READ = threading.RLock()


def _summary(fig: go.Figure) -> str:
    """figures.describe.summary, once per figure object (the cached figures are shown on every rerun)."""
    words = fig.__dict__.get("_lab_summary")
    if words is None:
        with _FIRST_READ:
            words = fig.__dict__.get("_lab_summary")
            if words is None:
                words = summary(fig)
                object.__setattr__(fig, "_lab_summary", words)  # the figure is never changed after it is shown
    return words


def _presenter(fig: go.Figure) -> go.Figure:
    """presenter_style of a figure, made once per figure object: its validating copy of every cached figure, on every
    rerun in presenter mode, was most of an Explorer rerun (#43); the styled copy is never changed either."""
    styled = fig.__dict__.get("_lab_presenter")
    if styled is None:
        with _FIRST_READ:
            styled = fig.__dict__.get("_lab_presenter") or presenter_style(go.Figure(fig))
            object.__setattr__(fig, "_lab_presenter", styled)
    return styled


def _data_table(target, fig: go.Figure, key: str) -> None:
    """The chart's numbers as tables (the CSV's, less the grey layers that only mark masked cells: the weights' own
    table has those cells as 0, the scores' as -inf), in a lazy popover: built only while it is open."""
    pop = target.popover("Data table", icon=":material/table:", key=f"{key}__table", on_change="rerun")
    if not pop.open:
        return
    with pop:
        grey = {t.name for t in fig.data if t.type == "heatmap" and is_underlay(t)}
        tables = {name: table for name, table in figure_tables(fig).items() if name not in grey}
        if not tables:
            st.caption("This chart has no table of numbers.")
        for name, table in tables.items():
            st.markdown(f"**{md_text(text(name))}**")
            if not table.columns.is_unique:  # a table needs distinct column names: number repeated labels
                table = table.set_axis([f"{i}: {c}" for i, c in enumerate(table.columns)], axis=1)
            st.dataframe(table, width="content")


def _export_buttons(target, fig: go.Figure, key: str, name: str) -> None:
    """A lazy popover: its buttons exist only while it is open (opening it reruns the page, every figure then
    comes from its cache), so a closed one costs one element instead of four on every rerun. The files are built
    only when clicked (deferred callables)."""
    safe = png_config(name)["toImageButtonOptions"]["filename"]
    pop = target.popover("Export", icon=":material/download:", key=f"{key}__export", on_change="rerun")
    if not pop.open:
        return
    with pop:
        st.segmented_control("Camera icon saves", IMAGE_FORMATS, key=f"{key}__format", required=True,
                             default=st.session_state.get(IMAGE_FORMAT, "png"), format_func=IMAGE_FORMATS.get,
                             on_change=_keep_format, args=(f"{key}__format",), help=IMAGE_HELP)
        st.caption("Then use the camera icon on the chart: every chart saves this format in this session.")
        st.download_button("Data (CSV)", data=lambda: figure_csv(fig), file_name=f"{safe}.csv", mime="text/csv",
                           key=f"{key}__csv", on_click="ignore")
        st.download_button("Interactive figure (HTML, works offline)", data=lambda: figure_html(fig, name),
                           file_name=f"{safe}.html", mime="text/html", key=f"{key}__html", on_click="ignore")


# What the modebar's camera saves (Plotly draws the file in the browser: PNG or SVG; a PDF needs a renderer on the
# server, kaleido and a Chrome, ~3 s a chart: not offered. An SVG opens in any vector editor, which saves a PDF).
IMAGE_FORMAT = "_chart_image_format"  # session_state: what every chart's camera saves (picked in an Export popover)
IMAGE_FORMATS = {"png": "PNG (for slides)", "svg": "SVG (vector, for papers)"}
IMAGE_HELP = "SVG keeps every line and letter sharp at any size; a vector editor (Inkscape, Illustrator) saves a PDF."


def _keep_format(widget_key: str) -> None:
    st.session_state[IMAGE_FORMAT] = st.session_state[widget_key]


class _Serialized(BaseFigure):
    """A figure as st.plotly_chart takes it, its dict made once per figure object.

    st.plotly_chart calls figure.to_dict() on every rerun, which deep-copies the figure and re-encodes each of its
    arrays. For the figures the pages take from the cache (one object for every student and rerun) that repeated
    work was 7 % of the Encoder-decoder page's server time (py-spy, bench/class_load.py saturation), and
    Streamlit has no option to skip it. This stand-in holds the dict and hands it over; Streamlit only reads it.
    BaseFigure.__init__ is skipped on purpose: Streamlit needs isinstance(..., BaseFigure) and to_dict(), nothing else.
    """

    def __init__(self, fig: go.Figure):  # BaseFigure.__init__ not called (see above)
        spec = fig.__dict__.get("_lab_dict")
        if spec is None:
            with _FIRST_READ:
                spec = self._first(fig)
        object.__setattr__(self, "_spec", spec)

    @staticmethod
    def _first(fig: go.Figure) -> dict:
        spec = fig.__dict__.get("_lab_dict")
        if spec is None:
            spec = fig.to_dict()
            if any(t.get("type") == "heatmap" and t.get("texttemplate") and t.get("text") is not None
                   for t in spec["data"]):  # numbers on cells in black or white per cell (a copy: the figure stays)
                spec = readable_numbers(go.Figure(fig)).to_dict()
            else:  # what the validating copy gave, without validating every property again (the 48 heatmaps
                spec = _as_validated(spec)  # of GPT-2's grid page: 46 ms of a 220 ms Explorer rerun)
            spec = fit_texts(spec)  # long titles wrapped to fit a phone (#42): the figure itself stays as it is
            object.__setattr__(fig, "_lab_dict", spec)  # the figure is never changed after it is shown
        return spec

    def to_dict(self) -> dict:
        return self._spec


def _as_validated(value):
    """A fast_figure's to_dict() as Plotly's validation stores it (tests/test_figures_roundtrip.py holds every factory
    to this): a property set to None is unset, a colour scale's name becomes its colour list; `meta` (free data) is
    kept as it is. In place."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None and k != "meta"]:
            del value[k]
        for k, v in value.items():
            if k == "colorscale" and isinstance(v, str):
                value[k] = copy.deepcopy(_scale(v))
            elif k != "meta" and isinstance(v, (dict, list)):
                _as_validated(v)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                _as_validated(v)
    return value


# lru_cache, not cached(): a pure function of an immutable argument (a colour scale's name), asked per heatmap while
# a figure is built, inside or outside cached(); the list is shared: read-only.
@functools.lru_cache(maxsize=64)
def _scale(name: str) -> list:
    return go.Heatmap(colorscale=name).to_plotly_json()["colorscale"]
