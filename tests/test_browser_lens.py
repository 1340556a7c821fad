"""Real headless Chromium: the Logit lens page (/logit-lens) on the English model draws the layers x positions map of
the lens's top token and the rank curve (1 at the last layer), and a sentence in the link redraws both."""

from urllib.parse import quote

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

ENGLISH = "English (WordNet prose, BPE)"  # the picker's label is its URL value
MAP = """([rows, cols]) => { const el = [...document.querySelectorAll('.js-plotly-plot')]
    .find(p => (p._fullData || []).some(t => t.name === 'top token'));
    if (!el) return false; const z = el._fullData.find(t => t.name === 'top token').z;
    return z.length === rows && z[0].length === cols; }"""
RANK = """() => { const el = [...document.querySelectorAll('.js-plotly-plot')]
    .find(p => (p._fullData || []).some(t => t.name === 'rank'));
    return el ? Array.from(el._fullData.find(t => t.name === 'rank').y) : null; }"""


def test_the_lens_map_and_the_rank_curve_are_drawn_and_follow_the_sentence(page):
    open_page(page, f"logit-lens?model_key={quote(ENGLISH)}", wait_chart=False)
    page.wait_for_function(MAP, arg=[5, 16])  # 4 layers + the embeddings; <bos> + the trophy sentence's 15 tokens
    page.wait_for_function(f"() => {{ const y = ({RANK})(); return y && y.length === 5 && y[4] === 1; }}")
    page.get_by_text("the last layer's lens equals the model's own output distribution").first.wait_for()
    wait_idle(page)
    screenshot(page, "lens")
    open_page(page, f"logit-lens?model_key={quote(ENGLISH)}&lens_text={quote('The cat sat on the')}",
              wait_chart=False)
    page.wait_for_function(MAP, arg=[5, 6])
    rank = page.evaluate(RANK)
    assert len(rank) == 5 and rank[-1] == 1 and all(r >= 1 for r in rank)
    assert page.console.errors() == []
