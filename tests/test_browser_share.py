"""Sharing in a real browser: shareable links, invalid links, presenter mode, exports."""

import re

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def heatmap_title(page) -> str:
    return page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.evaluate("el => el.layout.title.text")


def test_a_shared_link_opens_exactly_that_view_and_the_url_follows_widgets(page):
    open_page(page, "?start_text=I+like+cats&start_layer=1&start_head=1")
    assert re.search(r"layer 1\W+head 1", heatmap_title(page), re.I)
    assert len(plot_data(page, 0, "attention")["z"]) == 4  # <bos> I like cats
    page.get_by_label("Type a sentence").fill("The bank by the river")
    page.get_by_label("Type a sentence").press("Enter")
    wait_idle(page)
    page.wait_for_function("() => location.search.includes('bank')")
    assert "start_layer=1" in location(page) and "start_head=1" in location(page)
    assert page.console.errors() == []


def test_an_invalid_link_falls_back_to_defaults_with_a_notice(page):
    open_page(page, "?start_layer=99&start_head=banana&model_key=nonexistent")
    assert re.search(r"layer 0\W+head 0", heatmap_title(page), re.I)
    toasts = page.locator('[data-testid="stToast"]')
    toasts.first.wait_for()
    assert "not valid here" in toasts.first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.console.errors() == []


def test_presenter_mode_enlarges_type_and_survives_reload_via_the_link(page):
    open_page(page, "?presenter_mode=true")
    font = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.evaluate(
        "el => el.layout.font.size")
    assert font == 18
    assert page.locator('[data-testid="stHeader"]').is_hidden()
    screenshot(page, "presenter_start")
    assert page.console.errors() == []


def test_every_figure_offers_csv_and_offline_html_exports(page):
    open_page(page, "?start_text=I+like+cats")
    page.get_by_role("button", name="Export").first.click()
    with page.expect_download() as dl:
        page.get_by_role("button", name="Data (CSV)").click()
    csv = open(dl.value.path()).read()
    assert "# attention" in csv and "1 I" in csv
    with page.expect_download() as dl:
        page.get_by_role("button", name="Interactive figure (HTML, works offline)").click()
    html = open(dl.value.path()).read()
    assert "<script" in html and len(html) > 1_000_000  # plotly.js inlined
    assert "src=\"http" not in html  # nothing fetched from a CDN


def test_links_open_other_pages_exactly_too(page):
    open_page(page, "explorer?explorer_text=I+like+cats&explorer_layer=1&explorer_head=2&explorer_mask=bidirectional")
    expect(page.locator('input[aria-label="Sentence"]').first).to_have_value("I like cats")
    title = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').nth(1).evaluate("el => el.layout.title.text")
    assert re.search(r"layer 1\W+head 2", title, re.I)
    assert page.locator('[data-testid="stSidebar"]').get_by_text("Model").count() >= 1  # app.py ran: shared sidebar
    open_page(page, "generate?generate_text=please+send+the&generate_kind=sampling&generate_temperature=0.5"
                    "&generate_seed=7", wait_chart=False)
    expect(page.locator('input[aria-label="Prompt"]').first).to_have_value("please send the")
    expect(page.locator('input[aria-label="Seed"]').first).to_have_value("7")
    page.wait_for_function("() => location.search.includes('generate_seed=7')")  # the URL mirrors the view
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.console.errors() == []


def test_a_page_left_and_opened_again_from_the_sidebar_keeps_its_sentence(page):
    """Streamlit drops a page's widget values when the student navigates away; the sentence and the view must
    come back with the page (the Explorer used to return with an empty box and no chart)."""
    open_page(page, "explorer")
    nav = page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]')
    box = page.locator('input[aria-label="Sentence"]').first
    box.fill("I like cats")
    box.press("Enter")
    wait_idle(page)
    page.wait_for_function("() => location.search.includes('cats')")
    for name in ("Masks", "Start", "Explorer"):
        nav.filter(has_text=name).first.click()
        wait_idle(page)
    page.wait_for_selector('[data-testid="stPlotlyChart"] .js-plotly-plot')
    expect(box).to_have_value("I like cats")
    assert len(plot_data(page, 1, "attention")["z"]) == 4  # the large head map: <bos> I like cats
    assert page.get_by_text("Type at least one word").count() == 0
    assert page.console.errors() == []
