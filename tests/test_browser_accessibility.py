"""Accessibility audit (#29): axe-core 4.12 (axe-playwright-python, bundled, no network) in headless Chromium on
every page and every tab of each page, at 1400×1000. A critical or serious violation fails the test; the moderate
and minor ones are listed at the end of the run (conftest's terminal summary) and in test-artifacts/axe.txt.

axe does not look inside Plotly's SVG: the chart colours are checked in Python (tests/test_colour_access.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_walk import AXE, _audit, check_page_and_tabs
from conftest import open_page, screenshot

from viz_model.pages import page_urls

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]


def _page_urls() -> list[str]:
    """The url path of each page (viz_model.pages, the table app.py draws)."""
    return page_urls()


@pytest.mark.parametrize("url", _page_urls())
def test_no_serious_axe_violation_on_any_tab(page, url):
    open_page(page, "" if url == "start" else url, wait_chart=False)
    failing = check_page_and_tabs(page, url, _audit)
    assert failing == [], "\n".join(failing)
    assert page.console.errors() == []


@pytest.mark.parametrize("url", ["", "masks", "encoder-decoder"])
def test_presenter_mode_text_reaches_7_to_1(page, url):
    """Presenter mode is for projectors: WCAG AAA contrast (axe's color-contrast-enhanced, off by default)."""
    open_page(page, f"{url}?presenter_mode=true")
    failing = _audit(page, f"presenter {url or 'start'}", rules={"color-contrast-enhanced": {"enabled": True}})
    screenshot(page, f"presenter_{url or 'start'}")
    assert failing == [], "\n".join(failing)


def test_the_audit_can_fail(page):
    """The audit is not blind: a caption at Streamlit's default grey (3.9:1) is reported as serious."""
    open_page(page, "", wait_chart=False)
    page.wait_for_selector('[data-testid="stMain"] [data-testid="stCaptionContainer"] p')
    page.evaluate("""() => {
        const p = document.querySelector('[data-testid="stMain"] [data-testid="stCaptionContainer"] p');
                             p.style.color = '#828180';
                             p.closest('[data-testid="stCaptionContainer"]').style.opacity = '1'; }""")
    failing = AXE.run(page).response["violations"]
    assert any(v["id"] == "color-contrast" and v["impact"] == "serious" for v in failing)
