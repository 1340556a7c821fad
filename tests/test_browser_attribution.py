"""Real headless Chromium on /attribution: the tokens × methods heatmap and the correlation matrix are drawn with
their data, the checks pass, and picking another head redraws the head's column (and goes into the link)."""

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'
HEAT = "score / max |score|"
COLUMN = f"""(el) => {{ const t = el._fullData.find(t => t.name === '{HEAT}');
    return t ? Array.from(t.z, r => r[0]) : null; }}"""


def head_column(page):
    return page.locator(CHART).first.evaluate(COLUMN)


def test_attribution_page_draws_the_methods_and_their_agreement_and_a_head_redraws(page):
    open_page(page, "attribution")
    page.wait_for_function(f"""() => {{ const ps = [...document.querySelectorAll('{CHART}')];
        return ps.some(p => (p._fullData || []).some(t => t.name === '{HEAT}'))
            && ps.some(p => (p._fullData || []).some(t => t.name === 'Spearman ρ')); }}""")
    heat = plot_data(page, 0, HEAT)
    rows = len(heat["z"])
    assert rows >= 2 and all(len(r) == 5 for r in heat["z"])
    assert max(abs(v) for r in heat["z"] for v in r) == pytest.approx(1.0)
    rho = plot_data(page, 1, "Spearman ρ")["z"]
    assert len(rho) == 5 and all(len(r) == 5 for r in rho)
    page.get_by_text("every row of the attention rollout sums to 1").first.wait_for()
    assert not page.locator('[data-testid="stAlert"]').filter(has_text="✗").count()
    wait_idle(page)
    screenshot(page, "attribution")
    before = head_column(page)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Head").click()
    page.get_by_role("option", name="1", exact=True).click()
    page.wait_for_function(f"""(old) => {{ const p = document.querySelector('{CHART}');
        const t = p && (p._fullData || []).find(t => t.name === '{HEAT}');
        return t && Array.from(t.z, r => r[0]).some((v, i) => Math.abs(v - old[i]) > 1e-6); }}""", arg=before)
    page.wait_for_function("() => location.search.includes('attribution_head=1')")
    wait_idle(page)
    assert "attribution_head=1" in location(page)
    assert page.console.errors() == []
