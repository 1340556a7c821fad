"""#39 (item 5) in a real browser: record the view on screen as a lecture step and download the lecture's Markdown
file (a Playwright download, the bytes the browser saves), which loads as a lecture with that view."""

from __future__ import annotations

import pytest
from conftest import open_page, settled
from playwright.sync_api import expect

from viz_model.lectures import load_lecture

pytestmark = pytest.mark.browser


def test_a_recorded_view_downloads_as_a_lecture_file_that_loads(page, tmp_path):
    open_page(page, "explorer?explorer_layer=1&explorer_head=2")
    settled(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.locator('[data-testid="stExpander"] summary', has_text="Record a lecture").click()
    title = sidebar.get_by_label("Step title")
    title.fill("Head 2 of layer 1")
    title.press("Enter")  # the box commits its value (Streamlit sends it on Enter or blur)
    sidebar.get_by_label("Note (Markdown)").fill("Find the row of **sat**.")
    sidebar.get_by_role("button", name="Add this view as a step").click()
    download = sidebar.get_by_role("button", name="Download (.md)")
    expect(download).to_be_visible()  # drawn once the recording has a step
    expect(sidebar.get_by_text("1. Head 2 of layer 1")).to_be_visible()
    with page.expect_download() as got:
        download.click()
    assert got.value.suggested_filename == "My-lecture.md"
    path = tmp_path / "lecture.md"
    got.value.save_as(path)
    lec = load_lecture(path)
    assert lec.title == "My lecture" and len(lec.steps) == 1
    step = lec.steps[0]
    assert (step.title, step.page) == ("Head 2 of layer 1", "explorer")
    assert step.params == {"explorer_layer": "1", "explorer_head": "2"}
    assert step.text == "Find the row of **sat**."
    assert page.console.errors() == []
