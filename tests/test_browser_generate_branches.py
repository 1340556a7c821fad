"""#40 (item 5), in headless Chromium: the Generate page's Branches tab draws its branches, a token forced from the
picker adds the forced branch (continued with the KV cache) and its passing check; screenshots at 1400 and 390 px."""

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

ROWS = """() => { const p = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
                   .find(el => el._fullData && el._fullData.some(t => t.name === 'branches'));
                  const t = p && p._fullData.find(t => t.name === 'branches');
                  return t ? t.text.map(r => r.join('|')) : null; }"""


def test_branches_draw_and_a_forced_token_continues_with_a_passing_cache_check(page):
    open_page(page, "generate?generate_tab=Branches", wait_chart=False)
    page.wait_for_function(f"() => {{ const r = ({ROWS})(); return r && r.length === 3; }}")  # the chart's data
    wait_idle(page)
    before = page.evaluate(ROWS)
    assert "first differ at new token" in page.locator('[data-testid="stMain"]').inner_text()
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="the token").get_by_role("combobox")
    box.click()
    if not page.get_by_role("option").count():  # a click that only focused the box: the keyboard opens its menu
        box.press("ArrowDown")
    option = page.get_by_role("option").nth(2)  # the first new token's 2nd most probable candidate
    forced = option.inner_text().split(" · p = ")[0]
    option.click()
    page.wait_for_function(f"() => {{ const r = ({ROWS})(); return r && r.length === 4; }}")  # the continuation
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stAlert"]')]
                                     .some(a => a.innerText.includes('full recompute'))""")
    wait_idle(page)
    rows = page.evaluate(ROWS)
    assert rows[:3] == before and rows[3].split("|")[0] == forced  # branch A with its first token forced
    alerts = " ".join(page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "✓" in alerts and "✗" not in alerts
    screenshot(page, "generate_branches_1400")
    page.set_viewport_size({"width": 390, "height": 900})
    wait_idle(page)
    screenshot(page, "generate_branches_390")
    assert page.console.errors() == []
