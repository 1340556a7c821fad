"""Real headless Chromium: the Masks page's custom mask, edited cell by cell in the data editor, drives the model."""

import math

import pytest
from conftest import open_page, screenshot, wait_idle

from viz_model.ui.masks import EDITOR_INDEX_W

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'
EDITOR = '[data-testid="stDataFrame"]'
INDEX_W, HEADER_H, ROW_H = EDITOR_INDEX_W, 35, 35  # the data editor: its query column (set by the page), header, row


def probs_row(page, row: int) -> list[float]:
    return page.locator(CHART).nth(0).evaluate(
        "(el, r) => Array.from(el._fullData.find(t => t.name === 'probs').z[r])", row)


def cell_value(page, row: int, col: int) -> str:
    """The editor's accessible copy of a cell (column 0 is the index): 'true' / 'false'. It shows the initial
    data (glide does not refresh it after an edit), so the test reads edits back from the model's output."""
    return page.locator(EDITOR).first.locator(f"#glide-cell-{col + 1}-{row}").inner_text()


def click_cell(page, row: int, col: int, n_cols: int) -> None:
    """Click the checkbox of (query row, key col) on the editor's canvas."""
    grid = page.locator(EDITOR).first
    grid.scroll_into_view_if_needed()
    b = grid.bounding_box()
    col_w = (b["width"] - INDEX_W) / n_cols
    page.mouse.click(b["x"] + INDEX_W + col_w * (col + 0.5), b["y"] + HEADER_H + ROW_H * (row + 0.5))


def test_ticking_and_clearing_cells_of_the_custom_mask_reruns_the_model(page):
    open_page(page, "masks?masks_kind=Custom+(edit+cells)")
    page.wait_for_selector(EDITOR)
    wait_idle(page)
    before = probs_row(page, 0)
    T = len(before)
    assert before[0] == pytest.approx(1.0) and all(math.isnan(v) for v in before[1:])  # starts causal
    assert cell_value(page, 0, 1) == "false"

    click_cell(page, 0, 1, T)  # let query 0 read key 1
    page.wait_for_function(f"""() => {{ const t = document.querySelector('{CHART}')._fullData
        .find(t => t.name === 'probs'); return !Number.isNaN(t.z[0][1]); }}""")
    wait_idle(page)
    row = probs_row(page, 0)
    assert row[1] > 0 and sum(row[:2]) == pytest.approx(1.0, abs=1e-5) and all(math.isnan(v) for v in row[2:])
    assert page.get_by_text("Blocked cells get weight exactly 0").count() == 1

    click_cell(page, 0, 0, T)  # now query 0 reads only key 1
    page.wait_for_function(f"""() => {{ const t = document.querySelector('{CHART}')._fullData
        .find(t => t.name === 'probs'); return Number.isNaN(t.z[0][0]); }}""")
    wait_idle(page)
    row = probs_row(page, 0)
    assert math.isnan(row[0]) and row[1] == pytest.approx(1.0)
    click_cell(page, 0, 1, T)  # and now no key at all: the model lets it see itself
    page.wait_for_selector("text=Some rows had no allowed key")
    wait_idle(page)
    row = probs_row(page, 0)
    assert row[0] == pytest.approx(1.0) and all(math.isnan(v) for v in row[1:])
    screenshot(page, "masks_custom")
    assert page.console.errors() == []
