"""Real headless Chromium: a chart's own texts never sit on each other (#43, item 11): its title, axis titles and
annotations do not overlap, and on a phone Plotly's toolbar (the modebar) does not cover the title."""

import pytest
from conftest import browser_page, open_page, settled, wait_idle

pytestmark = pytest.mark.browser

# Every pair of a chart's texts whose boxes overlap, and a visible modebar over the title: [chart, text, text].
OVERLAPS = """() => { const out = [];
  const box = e => e.getBoundingClientRect();
  const hit = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1
                        && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  document.querySelectorAll('.js-plotly-plot').forEach((p, i) => {
    const texts = [...p.querySelectorAll('.gtitle, .xtitle, .ytitle, .annotation')].filter(e => e.textContent.trim());
    for (let a = 0; a < texts.length; a++) for (let b = a + 1; b < texts.length; b++)
      if (hit(box(texts[a]), box(texts[b]))) out.push([i, texts[a].textContent, texts[b].textContent]);
    const bar = p.querySelector('.modebar-container'), title = p.querySelector('.gtitle');
    const shown = bar && getComputedStyle(bar).display !== 'none' && bar.querySelector('.modebar')
                  && parseFloat(getComputedStyle(bar.querySelector('.modebar')).opacity) > 0;
    if (shown && title && hit(box(bar.querySelector('.modebar')), box(title)))
      out.push([i, 'modebar', title.textContent]);
  }); return out; }"""


def _overlaps(page, path: str) -> list:
    open_page(page, path)
    wait_idle(page)
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].every(p => p._fullLayout)")
    return page.evaluate(OVERLAPS)


def test_the_rnn_pages_axis_title_stays_below_its_chart_title(page):
    """The depth chart's y-axis title ("graph depth: sequential steps (log scale)") ran up into "Longest chain of
    operations" at 1400 px."""
    assert _overlaps(page, "recurrence") == []


@pytest.mark.parametrize("path", ["", "masks", "explorer"])
def test_no_chart_text_overlaps_on_a_laptop(page, path):
    assert _overlaps(page, path) == []


@pytest.mark.parametrize("path", ["", "masks", "explorer"])
def test_no_chart_text_overlaps_on_a_phone(browser, server_url, path):
    """390 x 844: the Masks gallery's four panel titles side by side ran into each other, and so did the Explorer
    grid's role labels ("previous-token 0.53") on the English model."""
    with browser_page(browser, server_url) as pg:
        pg.set_viewport_size({"width": 390, "height": 844})
        assert _overlaps(pg, path) == []


def test_on_a_phone_the_toolbar_does_not_cover_a_charts_title(browser, server_url):
    """390 x 844, touch: Plotly's modebar was drawn over "Layer 0 · head 0: attention weights" on Start."""
    with browser_page(browser, server_url) as pg:
        pg.set_viewport_size({"width": 390, "height": 844})
        found = _overlaps(pg, "")
        assert [o for o in found if o[1] == "modebar"] == [], found
        assert pg.locator(".js-plotly-plot .modebar-container").first.is_hidden()
    with browser_page(browser, server_url) as pg:  # on a laptop the modebar is still there (on hover)
        open_page(pg, "")
        pg.locator(".js-plotly-plot").first.hover()
        pg.wait_for_function("() => { const m = document.querySelector('.js-plotly-plot .modebar');"
                             " return m && parseFloat(getComputedStyle(m).opacity) > 0; }")


DRAWN = """() => { const ps = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')];
                   return ps.length > 0 && ps.every(p => p._fullLayout && p.querySelector('.main-svg')); }"""
# Every title, panel title and axis title of a chart whose box reaches past its chart's own box (the SVG), and every
# pair of a chart's title and annotations whose boxes overlap: [chart, what, text(s)].
FITS = """() => { const out = [];
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach((p, i) => {
    const s = p.querySelector('.main-svg').getBoundingClientRect();
    if (s.width === 0) return;
    const shown = sel => [...p.querySelectorAll(sel)].filter(e => e.textContent.trim())
      .map(e => [e.textContent, e.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    for (const [t, r] of shown('.gtitle, .annotation-text, text[class$="title"]'))
      if (r.left < s.left - 2 || r.right > s.right + 2 || r.top < s.top - 2 || r.bottom > s.bottom + 2)
        out.push([i, 'cut', t, Math.round(r.width), Math.round(s.width)]);
    const heads = shown('.gtitle, .annotation-text');
    for (let a = 0; a < heads.length; a++) for (let b = a + 1; b < heads.length; b++)
      if (hit(heads[a][1], heads[b][1])) out.push([i, 'overlap', heads[a][0], heads[b][0]]);
  }); return out; }"""


@pytest.mark.parametrize("path", ["rope", "encoder-decoder", "generate"])
def test_on_a_phone_every_chart_title_fits_its_chart_and_none_overlaps(browser, server_url, path):
    """#42 item 4, 390 x 844: Plotly does not wrap titles, and on a phone RoPE's "Head 0, pair 0 of each token:
    turned by t·ω₀ …" was 540 px wide in a 358 px chart, the Encoder–decoder's three panel titles ran into each
    other, and so did Generate's "1. model: p(next | prefix)" and "2. after greedy (renormalised)"."""
    with browser_page(browser, server_url, viewport={"width": 390, "height": 844}, is_mobile=True,
                      has_touch=True) as pg:
        open_page(pg, path)
        pg.wait_for_function(DRAWN)
        settled(pg)  # the script has finished and nothing on the page changed for 0.4 s: every chart drawn
        assert pg.evaluate(FITS) == []
