"""One way to put a figure on a page: presenter styling, slide-ready PNG, HTML and CSV exports."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from plotly.basedatatypes import BaseFigure

from viz_model.figures.common import png_config
from viz_model.figures.export import figure_csv, figure_html, presenter_style
from viz_model.ui.presenter import presenter_on


def show(fig: go.Figure, *, key: str, name: str | None = None, exports: bool = True, container=None, **kwargs):
    """st.plotly_chart with the app's conventions. `name` names the exported files (defaults to key).

    `container` (a column, tab...) is where to draw; exports=False for charts a live fragment redraws every second.
    """
    name = name or key
    target = container if container is not None else st
    if presenter_on():
        fig = presenter_style(go.Figure(fig))
    # theme=None: the figure's own template (figures.common.TEMPLATE) is what the student sees; see its comment
    event = target.plotly_chart(_Serialized(fig), key=key, config=png_config(name, scale=4 if presenter_on() else 3),
                                theme=None, **kwargs)
    if exports:
        _export_buttons(target, fig, key, name)
    return event


def _export_buttons(target, fig: go.Figure, key: str, name: str) -> None:
    """A lazy popover: its buttons exist only while it is open (opening it reruns the page, every figure then
    comes from its cache), so a closed one costs one element instead of four on every rerun. The files are built
    only when clicked (deferred callables)."""
    safe = png_config(name)["toImageButtonOptions"]["filename"]
    pop = target.popover("Export", icon=":material/download:", key=f"{key}__export", on_change="rerun")
    if not pop.open:
        return
    with pop:
        st.caption("PNG: use the camera icon on the chart (sized for slides).")
        st.download_button("Data (CSV)", data=lambda: figure_csv(fig), file_name=f"{safe}.csv", mime="text/csv",
                           key=f"{key}__csv", on_click="ignore")
        st.download_button("Interactive figure (HTML, works offline)", data=lambda: figure_html(fig, name),
                           file_name=f"{safe}.html", mime="text/html", key=f"{key}__html", on_click="ignore")


class _Serialized(BaseFigure):
    """A figure as st.plotly_chart takes it, its dict made once per figure object.

    st.plotly_chart calls figure.to_dict() on every rerun, which deep-copies the figure and re-encodes each of its
    arrays. For the figures the pages take from the cache (one object for every student and rerun) that repeated
    work was 7 % of the Encoder-decoder page's server time (py-spy, bench/classroom_load.py saturation), and
    Streamlit has no option to skip it. This stand-in holds the dict and hands it over; Streamlit only reads it.
    BaseFigure.__init__ is skipped on purpose: Streamlit needs isinstance(..., BaseFigure) and to_dict(), nothing else.
    """

    def __init__(self, fig: go.Figure):  # BaseFigure.__init__ not called (see above)
        spec = fig.__dict__.get("_lab_dict")
        if spec is None:
            spec = fig.to_dict()
            object.__setattr__(fig, "_lab_dict", spec)  # the figure is never changed after it is shown
        object.__setattr__(self, "_spec", spec)

    def to_dict(self) -> dict:
        return self._spec
