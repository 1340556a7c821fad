"""Real headless Chromium: the strided mask (one row of the mask table, #27) opens from a link, draws its four panels
and its checks, and its Stride slider is in the link."""

import math

import pytest
from conftest import location, open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def trace_z(page, name: str) -> list[list[float]]:
    return page.locator(CHART).nth(0).evaluate(
        "(el, n) => el._fullData.find(t => t.name === n).z.map(r => Array.from(r))", name)


def test_strided_mask_link_shows_its_pattern_and_checks(page):
    open_page(page, "masks?masks_kind=Strided+(sparse)&masks_stride=2")
    wait_idle(page)
    assert page.get_by_role("slider", name="Stride").count() == 1
    mask, probs = trace_z(page, "mask"), trace_z(page, "probs")
    T = len(mask)
    assert T > 4
    for t in range(T):
        for s in range(T):
            allowed = s <= t and (t - s < 2 or (t - s) % 2 == 0)
            assert mask[t][s] == (1 if allowed else 0), (t, s)
            assert allowed or probs[t][s] is None or math.isnan(probs[t][s])
        assert sum(p for p in probs[t] if p is not None and not math.isnan(p)) == pytest.approx(1.0, abs=1e-5)
    assert page.get_by_text("Blocked cells get weight exactly 0").count() == 1
    assert "masks_stride=2" in location(page)
    assert not page.console.errors(), page.console.errors()
    screenshot(page, "masks_strided")
