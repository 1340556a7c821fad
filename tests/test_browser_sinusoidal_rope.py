"""Real headless Chromium: both Position pages render without console errors; the RoPE score survives a shift."""

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def metric_value(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def test_sinusoidal_page_renders_curves_and_checks_without_console_errors(page):
    open_page(page, "sinusoidal")
    curves = plot_data(page, 0)
    assert curves[0]["name"].startswith("dim 0 (sin") and len(curves[0]["y"]) == 128
    n_curves = page.locator(CHART).count()
    page.get_by_role("tab", name="Shift matrix M_k").click()  # only the open tab runs: this reruns the page
    page.get_by_text("M_3·P_t = P_(t+3)").first.wait_for()
    wait_idle(page)
    assert "✓ M_3·P_t = P_(t+3)" in page.locator('[data-testid="stAlert"]').first.inner_text()
    assert "sinusoidal_tab=Shift" in location(page)  # the open tab is part of a shared link
    assert page.locator(CHART).filter(has=page.locator("text=dim 0 (sin")).count() == 0  # curves not drawn
    assert n_curves >= 1
    screenshot(page, "sinusoidal_shift")
    assert page.console.errors() == []


def test_rope_shift_slider_keeps_the_displayed_score(page):
    open_page(page, "rope", wait_chart=False)  # the first tab: tables, then its chart
    page.get_by_role("tab", name="Pair rotation").click()
    page.locator(CHART).filter(has=page.locator("text=Pair 0:")).first.wait_for()
    label = "score ⟨R_t q, R_s k⟩"
    before = metric_value(page, label)
    arrows = page.locator(CHART).filter(has=page.locator("text=Pair 0:")).first
    q_before = arrows.evaluate("el => el._fullData.find(t => t.name.startsWith('q at')).x[1]")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="shift both by").locator('input[type="range"]')
    slider.focus()
    for _ in range(5):
        slider.press("ArrowRight")
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
        .length > 0 && document.body.innerText.includes('shifting both positions by 5')""")
    assert metric_value(page, label) == before
    q_after = arrows.evaluate("el => el._fullData.find(t => t.name.startsWith('q at')).x[1]")
    assert abs(q_after - q_before) > 1e-3  # the arrows turned, the score did not
    assert "✓ shifting both positions by 5" in page.locator('[data-testid="stAlert"]').filter(
        has_text="shifting both").inner_text()
    screenshot(page, "rope_pair_rotation")
    for tab in ("Context extension", "Where it acts"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_function("(t) => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes(t)", arg=tab)
        wait_idle(page)
        page.locator(CHART).first.wait_for()
        screenshot(page, "rope_" + tab.split()[0].lower())
    assert page.console.errors() == []
