"""#29 item 5, charts for screen readers, in a real browser: under the Start page's heatmap a sentence names its
largest chosen weight, and the "Data table" popover holds the chart's numbers as a table."""

import html
import re

import numpy as np
import pytest
from conftest import open_page, plot_data, wait_idle

pytestmark = pytest.mark.browser


def test_start_heatmap_says_its_largest_weight_in_words_and_shows_its_numbers_as_a_table(page):
    open_page(page, "")
    z = np.array([[np.nan if v is None else v for v in row] for row in plot_data(page, 0, "attention")["z"]], float)
    ok = np.isfinite(z)
    choice = ok & (ok.sum(1, keepdims=True) > 1)  # row 0 (<bos>) may only read itself: weight 1 by the mask
    r, c = np.unravel_index(np.argmax(np.where(choice, z, -np.inf)), z.shape)
    ticks = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.evaluate(
        "el => ({x: el.layout.xaxis.ticktext, y: el.layout.yaxis.ticktext})")
    row, col = html.unescape(ticks["y"][r]), html.unescape(ticks["x"][c])

    caption = page.locator('[data-testid="stCaptionContainer"]', has_text="In words:").first
    words = caption.inner_text()
    assert f"at query '{row}' and key '{col}'" in words, words  # "'0 <bos>'" reads as typed, not "&lt;bos&gt;"
    said = float(re.search(r"has a choice is ([0-9.]+)", words)[1])
    assert abs(said - z[r, c]) <= 0.005, (said, z[r, c])
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    assert chart.get_attribute("role") == "figure"  # the same sentence is the chart's accessible name (alt)
    assert chart.get_attribute("aria-label") == words.removeprefix("In words: ")

    page.get_by_role("button", name="Data table").first.click()
    wait_idle(page)
    body = page.locator('[data-testid="stPopoverBody"]').first
    assert body.get_by_text("attention", exact=True).count() == 1
    T = len(z)
    cells = body.locator('[data-testid="stDataFrame"]').first.locator('[role="gridcell"]')
    page.wait_for_function("([el, n]) => el.querySelectorAll('[role=\"gridcell\"]').length >= n",
                           arg=[body.locator('[data-testid="stDataFrame"]').first.element_handle(), T * (T + 1)])
    texts = cells.all_inner_texts()[:T * (T + 1)]
    table = [texts[i * (T + 1):(i + 1) * (T + 1)] for i in range(T)]
    assert [t[0] for t in table] == [html.unescape(y) for y in ticks["y"]]  # each row named by its query
    numbers = np.array([[float(v) for v in t[1:]] for t in table])
    assert np.allclose(numbers, np.where(ok, z, 0.0), atol=1e-6)  # masked keys: weight 0
    assert numbers[r, c] == pytest.approx(said, abs=0.005)
    assert page.console.errors() == []
