"""Real headless Chromium: Explorer and Masks render with no console errors; hover and mask switching work."""

import math

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def _go(page, title: str, marker: str) -> None:
    """Open the app and follow the sidebar link (the way students arrive; runs app.py's navigation + sidebar)."""
    open_page(page, "")
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]').get_by_text(title, exact=True).click()
    page.wait_for_selector(f"text={marker}")
    wait_idle(page)
    page.wait_for_selector(CHART)


def _hover_cell(page, chart_index: int, col: int, row: int) -> str:
    """Move the mouse over heatmap cell (row, col) of a chart and return Plotly's hover label text."""
    plot = page.locator(CHART).nth(chart_index)
    plot.scroll_into_view_if_needed()
    x, y = plot.evaluate("""(el, [c, r]) => { const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
                              const b = el.getBoundingClientRect();
                              return [b.left + xa._offset + xa.l2p(c), b.top + ya._offset + ya.l2p(r)]; }""",
                         [col, row])
    page.mouse.move(x, y)
    label = page.locator(".hoverlayer .hovertext").first
    label.wait_for(state="visible", timeout=10_000)
    return label.evaluate("el => el.textContent")


def test_explorer_renders_and_hover_names_query_and_key(page):
    _go(page, "Explorer", "All heads at a glance")
    page.wait_for_function(f"() => document.querySelectorAll('{CHART}').length >= 3")  # grid, head, one step
    grid = plot_data(page, 0)
    assert all(t["type"] == "heatmap" for t in grid) and len(grid) >= 4
    # causal: query 0 cannot read key 1; that cell is grey and hovers as masked, a readable one with its weight
    masked = _hover_cell(page, 0, 1, 0)
    assert "L0 H0: query '0 " in masked and "→ key '1 " in masked and masked.endswith("masked (−∞)")
    seen = _hover_cell(page, 0, 0, 1)
    assert "query '1 " in seen and "→ key '0 " in seen and "masked" not in seen
    big = plot_data(page, 1, "attention")
    ticks = page.locator(CHART).nth(1).evaluate("el => el.layout.yaxis.ticktext")
    assert len(big["z"]) == len(big["z"][0]) == len(ticks) >= 10  # "The trophy didn't fit ... too big"
    the = [t for t in ticks if t.split(" ", 1)[1].lower() == "the"]
    assert len(the) == 2 and the[0] != the[1]  # the duplicate "the" keeps its own row
    text = _hover_cell(page, 1, 0, 2)
    assert "query '2 " in text and "→ key '0 " in text and "masked" not in text
    assert _hover_cell(page, 1, 2, 0).endswith("masked (−∞)")  # query 0 cannot read key 2
    screenshot(page, "explorer")
    page.get_by_role("tab", name="Query focus").click()  # only the open tab runs: the bars arrive with the click
    page.locator(CHART).filter(has=page.locator("text=looks")).first.wait_for()
    wait_idle(page)
    assert "explorer_tab=Query" in location(page)
    screenshot(page, "explorer_query_focus")
    assert page.console.errors() == []


def test_switching_the_mask_changes_the_heatmap(page):
    _go(page, "Masks", "Mask gallery")
    before = plot_data(page, 0, "probs")["z"]
    assert math.isnan(before[0][1])  # causal: query 0 cannot read key 1 (a hole, drawn grey)
    page.get_by_text("Bidirectional (encoder)", exact=True).click()
    wait_idle(page)
    page.wait_for_function(f"""() => {{ const p = document.querySelector('{CHART}');
        const t = p && p._fullData.find(t => t.name === 'probs'); return t && !Number.isNaN(t.z[0][1]); }}""")
    after = plot_data(page, 0, "probs")["z"]
    assert after[0][1] > 0 and after != before
    text = _hover_cell(page, 0, 1, 0)
    assert "query 0 " in text and "→ key 1 " in text
    screenshot(page, "masks_bidirectional")
    page.get_by_role("tab", name="Dependency map").click()  # only the open tab runs: the Jacobian comes now
    page.wait_for_selector("text=Causal: every output depends only on inputs")
    wait_idle(page)
    page.get_by_role("tab", name="Check yourself").click()
    page.wait_for_selector("text=Which change makes position explicit?")
    wait_idle(page)
    screenshot(page, "masks_quiz")
    assert page.console.errors() == []
