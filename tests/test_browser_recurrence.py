"""Real headless Chromium against `streamlit run`: the RNN vs Transformer page renders each tab without console
errors, a tiny timing (T = 16, 32, set by the page's link) draws from its button, and moving the W_hh slider
changes the trained RNN's gradient chart."""

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

# The traces of the chart whose title contains `prefix` (null while it is not drawn).
TRACES = """prefix => { const p = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
                          .find(el => el.layout && el.layout.title && (el.layout.title.text || '').includes(prefix));
                        return p ? p._fullData.map(t => ({name: t.name, x: Array.from(t.x),
                                                          y: Array.from(t.y, v => v === null ? null : v)}))
                                 : null; }"""


def traces(page, prefix: str):
    return page.evaluate(TRACES, prefix)


def wait_chart(page, prefix: str, timeout: float = 120_000):
    page.wait_for_function(f"() => ({TRACES})({prefix!r}) !== null", timeout=timeout)
    wait_idle(page)
    return traces(page, prefix)


def test_depth_and_a_tiny_timing_render_without_console_errors(page):
    open_page(page, "recurrence?recurrence_lengths=16&recurrence_lengths=32")
    depth = wait_chart(page, "Longest chain")
    assert {t["name"].split(" (")[0] for t in depth} == {"RNN", "transformer"}
    assert traces(page, "Forward + backward") is None  # nothing timed on open
    page.locator('button:has-text("Time forward + backward")').click()
    timing = wait_chart(page, "Forward + backward")
    assert [t["name"].split(" ·")[0] for t in timing] == ["RNN", "LSTM", "transformer"]
    assert all(t["x"] == [16, 32] and all(y > 0 for y in t["y"]) for t in timing)
    assert page.locator('button:has-text("Time again")').count() == 1
    screenshot(page, "recurrence_sequential")
    assert page.console.errors() == []


def test_w_hh_slider_changes_the_trained_rnn_gradient(page):
    open_page(page, "recurrence")
    page.get_by_role("tab", name="2 · Gradient by distance").click()
    before = wait_chart(page, "Trained RNN")
    assert wait_chart(page, "How far back") and wait_chart(page, "Linear regime")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Rescale the trained RNN").get_by_role("slider")
    slider.focus()
    slider.press("ArrowLeft")  # one event: quick successive presses can still be lost by the URL binding (#14)
    page.wait_for_function(f"""(old) => {{ const t = ({TRACES})('Trained RNN');
                                           return t && JSON.stringify(t[1].y) !== JSON.stringify(old); }}""",
                           arg=before[1]["y"], timeout=60_000)  # both sides serialised by the browser
    wait_idle(page)
    after = traces(page, "Trained RNN")
    assert after[1]["name"] != before[1]["name"]  # another ‖W_hh‖₂ in the legend
    assert after[0]["y"] == before[0]["y"]  # the as-trained reference stays
    screenshot(page, "recurrence_gradients")
    page.get_by_role("tab", name="3 · Recall by distance").click()
    acc = wait_chart(page, "Recall accuracy")
    assert len(acc) == 3
    screenshot(page, "recurrence_recall")
    assert page.console.errors() == []


def test_the_old_url_still_opens_the_lesson_with_its_settings(page):
    """#27 item 6: the lesson is `recurrence` in every layer and its URL; /rnn-vs-transformer links still open it."""
    open_page(page, "rnn-vs-transformer?recurrence_lengths=16&recurrence_lengths=32")
    assert page.get_by_text("Page not found").count() == 0
    depth = wait_chart(page, "Longest chain")
    assert {t["name"].split(" (")[0] for t in depth} == {"RNN", "transformer"}
    assert page.locator('[data-testid="stSidebar"] a[href$="recurrence"]').count() == 1  # the sidebar's one name
    assert page.console.errors() == []
