"""Real browser, real timers: a started run's loss chart grows by itself (run_every), Pause freezes it."""

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

# The last step on the chart's train curve, not its point count: the curve is downsampled to 300 points.
LOSS_LAST_STEP = """() => { const el = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
    .find(p => (p.layout.title && p.layout.title.text || '').includes('Loss: train'));
    if (!el) return 0; const t = el._fullData.find(t => t.name === 'train');
    return t && t.x.length ? Math.max(...t.x) : 0; }"""


def button(page, text):
    return page.locator('[data-testid="stButton"] button', has_text=text).first


def progress_text(page) -> str:
    return page.locator('[data-testid="stProgress"]').first.inner_text()


def test_live_run_grows_the_loss_chart_and_pause_freezes_it(page):
    open_page(page, "", wait_chart=False)  # the root first: kept from when pages/ triggered v1 MPA
    open_page(page, "train", wait_chart=False)
    steps = page.get_by_label("Steps")
    steps.fill("5000")  # the most allowed: ~50 s here, so Pause comes well before the end
    steps.press("Enter")
    wait_idle(page)
    button(page, "Start").click()
    page.wait_for_function(f"() => ({LOSS_LAST_STEP})() > 0", timeout=90_000)
    first = page.evaluate(LOSS_LAST_STEP)
    page.wait_for_function(f"() => ({LOSS_LAST_STEP})() > {first}", timeout=60_000)  # grows, no user action
    assert "running" in progress_text(page)
    button(page, "Pause").click()
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
        .some(p => p.innerText.includes('paused'))""", timeout=30_000)
    paused_text = progress_text(page)
    page.wait_for_timeout(2500)  # timers are off now; nothing moves
    assert progress_text(page) == paused_text
    assert page.evaluate(LOSS_LAST_STEP) > first
    screenshot(page, "train_paused")
    button(page, "Resume").click()
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
        .some(p => p.innerText.includes('running'))""", timeout=30_000)
    button(page, "Stop").click()
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
        .some(p => p.innerText.includes('stopped'))""", timeout=30_000)
    assert page.console.errors() == []
