"""#39 (item 8, exports): every chart saves SVG beside PNG. Plotly's modebar camera draws the file in the browser in
one format (toImageButtonOptions.format); the Export popover picks it for every chart of the session."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest


def _two_charts():
    import plotly.graph_objects as go

    from viz_model.ui import chart

    chart.show(go.Figure(go.Bar(y=[1, 2])), key="first", name="bars")
    chart.show(go.Figure(go.Scatter(y=[3, 1])), key="second", name="line")


def _formats(at) -> list[str]:
    return [json.loads(c.proto.config)["toImageButtonOptions"]["format"] for c in at.get("plotly_chart")]


def test_the_export_popover_switches_every_charts_camera_to_svg_and_back():
    at = AppTest.from_function(_two_charts, default_timeout=60)
    at.run()
    assert _formats(at) == ["png", "png"]
    at.session_state["first__export"] = True  # the first chart's Export popover, open
    at.run()
    picker = at.button_group(key="first__format")
    assert picker.options == ["PNG (for slides)", "SVG (vector, for papers)"]
    picker.set_value("svg").run()
    assert not at.exception
    assert _formats(at) == ["svg", "svg"]  # the other chart too: one choice for the session
    at.session_state["first__export"] = False  # closed: the choice stays
    at.run()
    assert _formats(at) == ["svg", "svg"]
    at.session_state["second__export"] = True
    at.run()
    at.button_group(key="second__format").set_value("png").run()
    assert _formats(at) == ["png", "png"]
