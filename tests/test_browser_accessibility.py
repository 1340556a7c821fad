"""Accessibility audit (#29): axe-core 4.12 (axe-playwright-python, bundled, no network) in headless Chromium on
every page and every tab of each page, at 1400×1000. A critical or serious violation fails the test; the moderate
and minor ones are listed at the end of the run (conftest's terminal summary) and in test-artifacts/axe.txt.

axe does not look inside Plotly's SVG: the chart colours are checked in Python (tests/test_colour_access.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from conftest import A11Y_NOTES, open_page, screenshot, settled, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
FAILING = ("critical", "serious")
AXE = Axe()


def _page_urls() -> list[str]:
    """The url path of each page, from app.py's PAGES (read, not imported: importing it would run the app)."""
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PAGES")
    return [url for _, file, _, _, url in ast.literal_eval(pages) if (ROOT / file).exists()]


def _audit(page, where: str, rules: dict | None = None) -> list[str]:
    """Run axe on the page as it is now; returns the failing violations as lines, notes the others."""
    settled(page)
    options = {"resultTypes": ["violations"], **({"rules": rules} if rules else {})}
    found = AXE.run(page, options=options).response["violations"]
    failing = []
    for v in found:
        nodes = "; ".join(n["html"][:90] for n in v["nodes"][:3])
        line = f"{where}: {v['id']} ({v['impact']}) ×{len(v['nodes'])}: {v['help']} — {nodes}"
        if v["impact"] in FAILING or (rules and v["id"] in rules):
            failing.append(line)
        else:
            A11Y_NOTES.append(line)
    return failing


def _tab_labels(page) -> list[str]:
    return page.locator('[data-testid="stMain"] [role="tab"]').all_inner_texts()


def _open_tab(page, label: str) -> None:
    tab = page.locator('[data-testid="stMain"] [role="tab"]').filter(has_text=label).first
    tab.click()
    page.wait_for_function("""label => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')]
        .some(t => t.innerText === label && t.getAttribute('aria-selected') === 'true')""", arg=label)
    wait_idle(page)


@pytest.mark.parametrize("url", _page_urls())
def test_no_serious_axe_violation_on_any_tab(page, url):
    open_page(page, "" if url == "start" else url, wait_chart=False)
    failing = _audit(page, url)
    seen, queue = set(), _tab_labels(page)
    tabless = ("start", "explorer", "generate", "cost", "attribution", "logit-lens", "sinks")  # pages without tabs
    assert url in tabless or queue, f"{url}: no tabs found"  # the walk ran
    while queue:
        label = queue.pop(0)
        if label in seen:
            continue
        seen.add(label)
        _open_tab(page, label)
        failing += _audit(page, f"{url} › {label}")
        queue += [lb for lb in _tab_labels(page) if lb not in seen]  # tabs inside this tab
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
