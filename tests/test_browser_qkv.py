"""Real headless Chromium: the Q, K and V page renders without console errors, picking another query token redraws
the lookup, and the variants and claims tabs render."""

import pytest
from conftest import location, open_page, plot_data, screenshot, wait_idle

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def _scores(page) -> list[float]:
    return plot_data(page, 0, "score")["y"]


def test_qkv_page_lookup_follows_the_query_and_tabs_render(page):
    open_page(page, "qkv")
    page.wait_for_selector("text=recomputed here equals the model's own head output")
    before = _scores(page)
    assert len(before) == 7  # <bos> The cat sat on the mat
    assert "✓ Σ_j p_j v_j" in page.locator('[data-testid="stAlert"]').filter(has_text="head output").inner_text()
    screenshot(page, "qkv_lookup")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Query token").click()
    page.get_by_role("option", name="2 · cat").click()
    page.wait_for_function(f"""(old) => {{ const p = document.querySelector('{CHART}');
        const t = p && p._fullData.find(t => t.name === 'score');
        return t && Array.from(t.y).some((y, i) => Math.abs(y - old[i]) > 1e-6); }}""", arg=before)
    wait_idle(page)
    after = _scores(page)
    assert max(abs(a - b) for a, b in zip(after, before)) > 1e-3
    weights = plot_data(page, 0, "softmax weight")["y"]
    assert sum(weights[3:]) == 0 and abs(sum(weights) - 1) < 1e-5  # query 2 reads keys 0..2 only
    assert "qkv_query=2" in location(page)  # the picked query is part of a shared link
    for tab, marker, name in (("Four variants", "text=Score matrix S", "qkv_variants"),
                              ("Minimal pairs", "text=final hidden state", "qkv_pairs"),
                              ("Held-out loss", "text=Recomputed here, the held-out losses match", "qkv_loss"),
                              ("Claims", "text=claims hold on these small models", "qkv_claims")):
        page.get_by_role("tab", name=tab).click()  # only the open tab runs: this reruns the page
        page.wait_for_selector(marker, timeout=90_000)
        wait_idle(page)
        screenshot(page, name)
    assert page.locator('[data-testid="stAlert"]').filter(has_text="✓ Raw-embedding attention").count() == 1
    assert page.console.errors() == []
