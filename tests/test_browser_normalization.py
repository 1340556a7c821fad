"""Real headless Chromium: the Normalization page renders without console errors, a new random seed redraws the
LayerNorm figure with new data, the residual run fills its charts from the button, and every tab draws."""

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'
Z = "() => JSON.stringify(document.querySelector('[data-testid=\"stPlotlyChart\"] .js-plotly-plot')._fullData[0].z)"


def test_a_new_seed_redraws_the_norm_figures_without_console_errors(page):
    open_page(page, "normalization")
    expect(page.locator(CHART)).to_have_count(3)  # one figure per norm (they arrive one after another)
    first = plot_data(page, 0)[0]
    assert first["name"] == "LayerNorm" and len(first["z"]) == 3 * 4 and len(first["z"][0]) == 8  # (N·T, d)
    before = page.evaluate(Z)
    seed = page.get_by_label("Random seed", exact=True).and_(page.locator("input"))
    seed.fill("5")
    seed.press("Enter")
    page.wait_for_function(f"(b) => ({Z})() !== b", arg=before)
    wait_idle(page)
    assert "norm_seed=5" in location(page)  # the batch is part of a shared link
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "✓ LayerNorm: every token's mean over its features is 0" in text
    screenshot(page, "normalization_axes")
    page.get_by_role("tab", name="Four reasons").click()
    page.get_by_text("Padding positions at the end of sample 2").wait_for()
    page.locator(CHART).first.wait_for()
    wait_idle(page)
    assert "0.0 (exactly)" in page.locator('[data-testid="stTable"]').first.inner_text()
    screenshot(page, "normalization_reasons")
    assert page.console.errors() == []


def test_the_residual_run_fills_its_charts_from_the_button(page):
    open_page(page, "normalization?norm_tab=Residual+connections&norm_res_steps=10", wait_chart=False)
    assert page.locator(CHART).count() == 0  # nothing trains on open
    page.get_by_role("button", name="Train both 12-block stacks").click()
    page.locator(CHART).nth(2).wait_for(timeout=180_000)
    wait_idle(page)
    stream = {t["name"]: t["y"] for t in plot_data(page, 0)}
    assert len(stream["with the residual x + F(x)"]) == 12
    assert stream["without it: F(x) only"][0] < stream["without it: F(x) only"][-1]  # vanishing toward the input
    assert [len(t["y"]) for t in plot_data(page, 2)] == [10, 10]
    screenshot(page, "normalization_residual")
    assert page.console.errors() == []


def test_placement_and_batch_tabs_draw(page):
    open_page(page, "normalization?norm_tab=Pre-+vs+post-norm&norm_place_steps=10&norm_place_layers=2",
              wait_chart=False)
    page.get_by_role("button", name="Train the four setups").click()
    page.locator(CHART).nth(2).wait_for(timeout=180_000)
    wait_idle(page)
    assert len(plot_data(page, 0)) == 4
    assert page.get_by_role("link", name="Compare setups").count() == 1
    screenshot(page, "normalization_placement")
    page.get_by_role("tab", name="The batch dimension").click()
    page.get_by_text("the samples of a batch never meet").first.wait_for()
    wait_idle(page)
    page.wait_for_function(f"() => {{ const el = document.querySelector('{CHART}'); "
                           "return el && el._fullData && el._fullData.length === 2; }")
    assert [t["name"] for t in plot_data(page, 0)] == ["sample 1", "sample 2"]
    screenshot(page, "normalization_batch")
    assert page.console.errors() == []
