"""Real headless Chromium: /sinks draws the first-token map, the losses and the streaming chart (waited for by their
data), and the sinks slider redraws the stream and goes into the link."""

import pytest
from conftest import location, open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

STREAM = """(name) => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => (p._fullData || []).some(t => t.name === name && t.y && t.y.length > 10))"""
SHARE = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => (p._fullData || []).some(t => t.name === 'first-token share' && t.z && t.z.length > 0))"""


def test_sinks_page_draws_its_charts_and_the_sinks_slider_redraws_the_stream(page):
    open_page(page, "sinks")
    page.wait_for_function(SHARE, timeout=120_000)
    page.wait_for_function(STREAM, arg="W=64: window + first 4 kept", timeout=120_000)
    page.get_by_text("equals one ordinary forward pass").first.wait_for()
    wait_idle(page)
    screenshot(page, "sinks")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="First tokens kept").locator(
        'input[type="range"]')
    slider.focus()
    slider.press("ArrowLeft")
    page.wait_for_function(STREAM, arg="W=64: window + first 3 kept", timeout=120_000)
    page.wait_for_function("() => location.search.includes('sinks_n=3')")
    assert "sinks_n=3" in location(page)
    wait_idle(page)
    assert page.console.errors() == []
