"""Real headless Chromium against `streamlit run`: the Generate page shows its first token at once; two steps more and
three rows appear."""

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

NEXT = 'button:has-text("Next token")'
TRACES = """name => { const p = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
                        .find(el => el._fullData && el._fullData.some(t => t.name === name));
                      return p ? p._fullData.map(t => ({name: t.name, rows: t.z ? t.z.length : null})) : null; }"""


def traces(page, name: str):
    """Names (and heatmap row counts) of the traces of the chart that has a trace called `name`."""
    return page.evaluate(TRACES, name)


def wait_settled(page):
    """The rerun has finished: nothing is running and no element from the previous run is still shown (stale)."""
    wait_idle(page)
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")


def grid_rows(page) -> int:
    """Body rows of the first st.dataframe (glide grid: aria-rowcount counts the header row too)."""
    return int(page.locator('[data-testid="stDataFrame"] [role="grid"]').first.get_attribute("aria-rowcount")) - 1


def test_stepping_three_times_adds_three_rows_without_console_errors(page):
    open_page(page, "generate", wait_chart=False)
    page.wait_for_selector(NEXT)
    page.wait_for_function(f"""() => {{ const t = ({TRACES})('attention');
                                       return t && t.find(x => x.name === 'attention').rows === 1; }}""")
    wait_settled(page)  # the first token is there at once (the page opened on an empty chart before)
    for n in (2, 3):
        page.locator(NEXT).click()
        page.wait_for_function(f"""() => {{ const t = ({TRACES})('attention');
                                           return t && t.find(x => x.name === 'attention').rows === {n}; }}""")
        wait_settled(page)
    page.get_by_role("button", name="Measure on this server").click()  # the KV cache tab times only on its button
    page.wait_for_function(f"() => ({TRACES})('with KV cache (only the new token)') !== null")  # tab drawn
    wait_settled(page)
    assert next(t for t in traces(page, "attention") if t["name"] == "attention")["rows"] == 3
    assert grid_rows(page) == 3  # three generated tokens; the end token, not written, is no factor (#26)
    assert [t["name"] for t in traces(page, "model p")] == ["model p", "after filter"]
    alerts = " ".join(page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "Every row sums to 1" in alerts and "with and without the cache; largest" in alerts and "✗" not in alerts
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 3  # no stale duplicates left behind
    screenshot(page, "generate_step3")
    assert page.console.errors() == []
