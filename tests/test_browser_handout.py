"""#39 (item 8): each built-in lecture's handout opens in Chromium from file:// with no server running for it, the
browser asks for nothing but the file itself, and every chart in it draws its data."""

from __future__ import annotations

import re

import pytest
from conftest import browser_page

from viz_model.lectures import builtin_lectures

pytestmark = pytest.mark.browser

LECTURES = builtin_lectures()

# Each chart div: how many traces Plotly holds for it, and how many it drew (an SVG trace group, a heatmap's image,
# or a WebGL canvas).
_CHARTS = """() => [...document.querySelectorAll('.plotly-graph-div')].map(d => ({
    id: d.id, data: (d.data || []).length, full: (d._fullData || []).length,
    drawn: d.querySelectorAll('.main-svg g.trace, .main-svg g.hm image, canvas').length}))"""
_ALL_DRAWN = """(n) => { const c = [...document.querySelectorAll('.plotly-graph-div')];
    return c.length === n && c.every(d => d._fullData && d._fullData.length > 0
        && d.querySelectorAll('.main-svg g.trace, .main-svg g.hm image, canvas').length > 0); }"""


@pytest.mark.parametrize("name", list(LECTURES))
def test_the_handout_opens_offline_and_every_chart_draws(browser, handout_files, name):
    text = open(handout_files[name], encoding="utf-8").read()
    n_charts = len(re.findall(r'Plotly\.newPlot\(\s*"step\d+-', text))  # the handout's charts
    assert n_charts > 0
    with browser_page(browser, "file://") as page:
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"file://{handout_files[name]}")
        page.wait_for_function(_ALL_DRAWN, arg=n_charts)  # a condition: every chart has drawn its data
        charts = page.evaluate(_CHARTS)
        assert len(charts) == n_charts
        # every trace is in Plotly's drawing, and each chart drew (a layer with no cell to grey, e.g. no future
        # position yet, has nothing to draw)
        assert all(c["data"] > 0 and c["full"] == c["data"] >= c["drawn"] > 0 for c in charts), charts
        assert sum(c["drawn"] for c in charts) >= 0.95 * sum(c["data"] for c in charts)
        assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]
        assert page.console.errors() == []
        assert page.locator("h2").count() == len(LECTURES[name].steps)


def test_a_handout_chart_saves_as_svg_offline(browser, handout_files):
    """Beside the modebar's PNG, each chart's "Save as SVG" writes a vector file, in the browser, with no server."""
    name = next(iter(handout_files))
    with browser_page(browser, "file://") as page:
        page.goto(f"file://{handout_files[name]}")
        page.wait_for_function("() => document.querySelector('.plotly-graph-div')?._fullData?.length > 0")
        first = page.locator("button.save").first
        with page.expect_download() as got:
            first.click()
        download = got.value
        assert download.suggested_filename.endswith(".svg")
        svg = open(download.path(), encoding="utf-8").read()
        assert svg.lstrip().startswith("<svg") and "</svg>" in svg and "<text" in svg  # a vector drawing with labels
        assert page.console.errors() == []
