"""Real headless Chromium against `streamlit run`: the Cost page opens without measuring, a tiny sweep (T = 16 … 64,
set by the page's link) runs from its button, and the measured log-log charts appear with their slopes."""

import re

import pytest
from conftest import open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser

MEASURE = 'button:has-text("Measure on this server")'
# The traces of the chart whose first trace is a measured line (the KV chart has no "slope" in its names).
TRACES = """prefix => { const p = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
                          .find(el => el._fullData && el._fullData.some(t => t.name.startsWith(prefix)));
                        return p ? p._fullData.map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))
                                 : null; }"""


def test_a_tiny_sweep_from_the_button_draws_measured_slopes_without_console_errors(page):
    open_page(page, "cost?cost_cpu_T=16&cost_cpu_T=64&cost_cpu_budget=30")  # waits for the KV-cache chart
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 1  # nothing measured on open
    kv = plot_data(page, 0)
    assert any(t["name"].startswith("lecture-sized") for t in kv)
    page.locator(MEASURE).click()
    page.wait_for_function(f"() => ({TRACES})('one T×T score matrix') !== null", timeout=120_000)
    wait_idle(page)
    memory = page.evaluate(TRACES, "one T×T score matrix")
    measured = [t for t in memory if "computed" not in t["name"]]
    assert len(measured) == 4 and all(t["x"] == [16, 32, 64] for t in measured)
    assert all(re.search(r"slope -?\d+\.\d\d$", t["name"]) for t in memory), [t["name"] for t in memory]
    assert all(y > 0 for t in measured for y in t["y"])
    assert page.locator('button:has-text("Measure again")').count() == 1
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Memory limit:" in text and "the lecture" in text
    assert page.locator('button:has-text("Stop")').count() == 0  # shown only while the sweep runs
    screenshot(page, "cost_tiny_sweep")
    assert page.console.errors() == []


def test_stop_interrupts_a_long_sweep_and_frees_the_server(page):
    open_page(page, "cost?cost_cpu_T=256&cost_cpu_T=4%2C096&cost_cpu_budget=120")  # a minute or more if left to run
    page.locator(MEASURE).click()
    page.get_by_role("button", name="Stop", exact=True).click()
    page.wait_for_selector('text=The measurement stopped before it finished', timeout=120_000)
    wait_idle(page)
    assert page.evaluate(TRACES, "one T×T score matrix") is None  # nothing stored, nothing drawn
    open_page(page, "cost?cost_cpu_T=16&cost_cpu_T=32&cost_cpu_budget=30")  # the one-sweep lock was released
    page.locator(MEASURE).click()
    page.wait_for_function(f"() => ({TRACES})('one T×T score matrix') !== null", timeout=120_000)
    assert "Another measurement is running" not in page.locator('[data-testid="stMain"]').inner_text()
    assert page.console.errors() == []
