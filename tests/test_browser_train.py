"""Real browser, real timers: a started run's loss chart grows by itself (run_every), Pause freezes it."""

import json
import re

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
    steps = page.get_by_role("spinbutton", name="Steps")
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


# -- every part that shows a run stays live (#14): the badge, Attention evolution, Compare setups -------------
BADGE = """() => { const c = [...document.querySelectorAll(
    '[data-testid="stSidebar"] [data-testid="stCaptionContainer"]')]
    .find(e => e.innerText.includes('Training') || e.innerText.includes('Trained'));
    return c ? c.innerText : ''; }"""
# Snapshots in the Attention evolution player (its slider has one step per kept snapshot).
EVOLUTION_FRAMES = """() => { const el = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
    .find(p => (p.layout.title && p.layout.title.text || '').includes('Probe attention at step'));
    return el && el.layout.sliders ? el.layout.sliders[0].steps.length : 0; }"""
# Runs with at least one point on the Compare setups chart.
COMPARE_RUNS = """() => { const el = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
    .find(p => (p.layout.title && p.layout.title.text || '').includes('Same setup, one thing changed'));
    return el ? el._fullData.filter(t => t.x && t.x.length > 0).length : 0; }"""
MAIN_RUNNING = """() => { const p = document.querySelector('[data-testid="stProgress"]');
    return !!p && p.innerText.includes('· running'); }"""


def configure(page, steps: int, every: int):
    for label, value in (("Steps", steps), ("Snapshot every", every)):
        box = page.get_by_role("spinbutton", name=label)
        box.fill(str(value))
        box.press("Enter")
        wait_idle(page)


def test_a_running_jobs_badge_and_evolution_follow_the_run_without_a_click(page):
    open_page(page, "train", wait_chart=False)
    page.get_by_role("tab", name="Attention evolution").click()
    wait_idle(page)
    configure(page, steps=5000, every=5)  # ~50 s of training: the checks below come long before its end
    button(page, "Start").click()
    # The badge counts steps (it said "step 0/5,000" for the whole run) ...
    page.wait_for_function(f"() => /running — step ([1-9][0-9,]*)\\//.test(({BADGE})())", timeout=90_000)
    first = page.evaluate(BADGE)
    page.wait_for_function(f"() => ({BADGE})() !== {json.dumps(first)} && ({BADGE})().includes('running')",
                           timeout=60_000)
    # ... and the evolution tab shows snapshots as they arrive, while the run is still going.
    page.wait_for_function(f"() => ({EVOLUTION_FRAMES})() >= 2 && ({MAIN_RUNNING})()", timeout=60_000)
    screenshot(page, "train_live_during")
    button(page, "Stop").click()
    page.wait_for_function(f"() => ({BADGE})().includes('stopped')", timeout=30_000)
    assert page.console.errors() == []


def test_a_finished_run_and_compare_setups_show_their_final_state_without_a_click(page):
    open_page(page, "train", wait_chart=False)
    page.get_by_role("tab", name="Attention evolution").click()
    wait_idle(page)
    configure(page, steps=10, every=5)
    button(page, "Start").click()
    page.wait_for_function(f"() => ({BADGE})().includes('done') && ({BADGE})().includes('10/10')", timeout=120_000)
    page.wait_for_function(f"() => ({EVOLUTION_FRAMES})() === 2", timeout=30_000)  # steps 5 and 10
    screenshot(page, "train_live_after")
    page.get_by_role("tab", name="Compare setups").click()
    wait_idle(page)
    run = page.locator('[data-testid="stButton"] button', has_text="side by side").first
    n = int(re.search(r"Run (\d+) side by side", run.inner_text()).group(1))
    run.click()
    # No widget is touched from here on: the runs' bars and the chart must reach their final state on their own.
    page.wait_for_function(f"""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
        .filter(p => p.innerText.includes(': done')).length === {n}""", timeout=180_000)
    page.wait_for_function(f"() => ({COMPARE_RUNS})() >= {n}", timeout=30_000)
    screenshot(page, "train_compare_after")
    assert page.console.errors() == []


def test_an_uploaded_checkpoint_is_listed_in_the_sidebar_at_once(page, tmp_path):
    import shutil
    from pathlib import Path

    shipped = Path(__file__).resolve().parent.parent / "assets" / "models"
    files = [shutil.copy(shipped / f"classroom{e}", tmp_path / f"my-upload{e}") for e in (".json", ".safetensors")]
    open_page(page, "train", wait_chart=False)
    page.get_by_role("tab", name="Save / load").click()
    wait_idle(page)
    # stMain: the sidebar's "Record a lecture" has an uploader too (a lecture file), so the page's is named
    page.locator('[data-testid="stMain"] [data-testid="stFileUploader"] input[type="file"]').set_input_files(files)
    page.get_by_text("my-upload.json").wait_for()
    page.get_by_role("button", name="Check and add").click()
    page.get_by_text("valid safetensors").wait_for()
    # No other interaction: the sidebar's Model menu, drawn before the click was handled, already lists it.
    model = page.locator('[data-testid="stSidebar"]').get_by_role("combobox", name="Model", exact=True)
    model.scroll_into_view_if_needed()  # a click that scrolls the sidebar first closes the menu it opens
    model.click()
    page.get_by_role("option", name="my-upload (yours)").wait_for(timeout=10_000)
    assert page.console.errors() == []
