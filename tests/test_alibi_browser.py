"""Real headless Chromium: the RoPE page's ALiBi tab draws one bias heatmap per head, and the heads slider redraws
it (and goes into the link)."""

import pytest
from conftest import location, open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'
HEADS = """(n) => { const el = [...document.querySelectorAll('.js-plotly-plot')]
    .find(p => (p._fullData || []).some(t => t.name === 'head 0'));
    return el && el._fullData.filter(t => t.name.startsWith('head ')).length === n; }"""


def bias_cell(page, head: int, i: int, j: int) -> float:
    """A cell of the ALiBi chart, found by its traces' names (its panel titles are wrapped to fit a phone: their
    drawn text is split over lines)."""
    return page.evaluate("""(a) => { const el = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => (p._fullData || []).some(t => t.name === 'head 0'));
        return el._fullData.find(t => t.name === 'head ' + a[0]).z[a[1]][a[2]]; }""", [head, i, j])


def test_alibi_tab_draws_the_bias_per_head_and_the_heads_slider_redraws_it(page):
    open_page(page, "rope", wait_chart=False)  # the first tab; then the ALiBi tab as a student clicks it
    page.get_by_role("tab", name="ALiBi").click()
    page.wait_for_function(HEADS, arg=4)
    assert bias_cell(page, 0, 7, 3) == pytest.approx(-0.25 * 4)      # head 0: m = 2^(-8/4), distance 4
    assert bias_cell(page, 3, 9, 1) == pytest.approx(-(2 ** -8) * 8)  # head 3: m = 2^(-8)
    blocked = bias_cell(page, 0, 2, 5)
    assert blocked is None or blocked != blocked                      # a later key: blocked, a hole (NaN)
    page.get_by_text("equal −m_h·|i − j|, head by head").first.wait_for()  # the shipped model's check
    wait_idle(page)
    assert "rope_tab=ALiBi" in location(page)
    screenshot(page, "rope_alibi")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="heads").locator('input[type="range"]')
    slider.focus()
    for _ in range(4):
        slider.press("ArrowRight")
    page.wait_for_function(HEADS, arg=8)
    page.wait_for_function("() => location.search.includes('rope_alibi_heads=8')")
    assert bias_cell(page, 7, 5, 0) == pytest.approx(-(2 ** -8) * 5)  # 8 heads: m = 1/2, 1/4, ..., 1/256
    wait_idle(page)
    screenshot(page, "rope_alibi_8_heads")
    assert page.console.errors() == []
