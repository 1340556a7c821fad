"""ui.chart hands Streamlit each figure's dict made once: for a figure without numbers on its cells it skips the
validating copy (46 ms for GPT-2's grid page) and must give exactly what that copy gave, for every figure factory,
its long texts wrapped to fit a phone (figures.common.fit_texts, #42) in both."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest
from test_figures_roundtrip import SAMPLES

from viz_model.figures.common import fit_texts
from viz_model.figures.export import readable_numbers
from viz_model.ui.chart import _Serialized


def assert_identical(a, b, path: str = "figure") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            assert_identical(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_identical(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), path
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} vs {b!r}"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_dict_sent_is_the_validated_copy(name):
    fig = SAMPLES[name]()
    assert_identical(_Serialized(fig).to_dict(), fit_texts(readable_numbers(go.Figure(fig)).to_dict()))


def test_a_chart_without_toolbar_has_no_modebar_and_others_keep_theirs():
    """The sidebar's class histogram (toolbar=False): Plotly's modebar covered its title on hover in the narrow
    sidebar. Every other chart keeps the modebar and its PNG camera."""
    import json

    from streamlit.testing.v1 import AppTest

    def script():
        import plotly.graph_objects as go

        from viz_model.ui import chart

        fig = go.Figure(go.Bar(x=[1, 2], y=["a", "b"], orientation="h"))
        chart.show(fig, key="with", exports=False)
        chart.show(fig, key="without", exports=False, toolbar=False)

    at = AppTest.from_function(script).run()
    assert not at.exception
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]  # in the script's order
    assert configs[0].get("displayModeBar", True) is True and configs[0]["toImageButtonOptions"]["format"] == "png"
    assert configs[1]["displayModeBar"] is False
