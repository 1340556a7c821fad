"""Every page on a phone (#42, item 4): at 390 × 844, mobile and touch, on every page and every tab (tabs inside tabs
too) there is no page-wide horizontal scroll and no element of the page reaching past the screen's edge, no link's or
button's label is cut, every Plotly chart fits the width, and axe-core finds no serious or critical violation,
including WCAG 2.2's target size (a control at least 24 × 24 px, or spaced as if it were; axe's "target-size" rule,
off by default). A student who opens a class's link on a phone answers its poll in two taps."""

from __future__ import annotations

import pytest
from axe_walk import _audit, check_page_and_tabs
from conftest import ReusedPage, browser_page, lead_class, pick_option, screenshot, settled, streamlit_server, wait_idle
from playwright.sync_api import expect

from viz_model.pages import page_urls

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 1}
TARGET_SIZE = {"target-size": {"enabled": True}}

# What reaches past the screen's right (or left) edge: the page's own scroll width, the app's scrolling containers',
# and each element of the main block whose box does so without a scrolling box (a table, st.tabs' tab list, a code
# block) between it and the page: the outermost such elements, named.
OVERFLOW = """() => { const w = window.innerWidth, out = [];
  const se = document.scrollingElement;
  if (se.scrollWidth > w + 1) out.push(`the page scrolls sideways: ${se.scrollWidth} px wide`);
  document.querySelectorAll('[data-testid="stAppViewContainer"], [data-testid="stMain"]').forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1) out.push(`${e.dataset.testid} scrolls sideways: ${e.scrollWidth} px`); });
  const main = document.querySelector('[data-testid="stMain"]');
  const scrolls = e => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(e).overflowX);
  const inScroller = e => { for (let a = e.parentElement; a && a !== main; a = a.parentElement)
                              if (scrolls(a)) return true; return false; };
  const name = e => e.dataset.testid || e.className?.baseVal || e.className || e.tagName;
  const wide = [...main.querySelectorAll('*')].filter(e => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && (r.right > w + 1 || r.left < -1) && !inScroller(e); });
  const span = r => `spans ${Math.round(r.left)}..${Math.round(r.right)} px`;
  wide.filter(e => !wide.includes(e.parentElement)).slice(0, 5).forEach(e =>
    out.push(`${e.tagName.toLowerCase()} ${String(name(e)).slice(0, 60)} ${span(e.getBoundingClientRect())}`));
  main.querySelectorAll('[data-testid="stPageLink-NavLink"], button').forEach(e => {
    const t = e.querySelector('[data-testid="stMarkdownContainer"]');  // a link's or button's label, cut short
    if (t && t.scrollWidth > t.clientWidth + 1) out.push(`the label "${t.innerText.slice(0, 40)}" is cut`); });
  main.querySelectorAll('.js-plotly-plot').forEach((p, i) => {
    const r = p.getBoundingClientRect();
    if (r.width > 0 && (r.left < -1 || r.right > w + 1))
      out.push(`chart ${i} (${p.layout?.title?.text || ''}) ${span(r)}`); });
  return out; }"""


def phone_page(browser, base_url: str):
    """A fresh phone-size browser context and page (conftest.browser_page at 390 x 844, mobile, touch)."""
    return browser_page(browser, base_url, **PHONE)


def _check(page, where: str) -> list[str]:
    audit = _audit(page, where, rules=TARGET_SIZE)  # which settles the page first (axe_walk._audit)
    return [f"{where}: {line}" for line in page.evaluate(OVERFLOW)] + audit


@pytest.fixture(scope="module")
def _reused_phone(browser, server_url):
    holder = ReusedPage(browser, server_url, PHONE)
    yield holder
    holder.close()


@pytest.fixture
def phone(_reused_phone):
    """A phone's page on the session server, kept from test to test in this module as conftest's `page` is (a fresh
    Streamlit session at each test's first URL, the renderer's compiled JavaScript kept)."""
    yield _reused_phone.get()
    _reused_phone.reset()


@pytest.mark.parametrize("url", page_urls())
def test_every_page_and_tab_fits_a_phone(phone, server_url, url):
    pg = phone
    pg.goto(f"{server_url}/{'' if url == 'start' else url}")
    pg.wait_for_selector('[data-testid="stApp"]')
    wait_idle(pg)
    failing = check_page_and_tabs(pg, url, _check)
    assert failing == [], "\n".join(failing)
    assert pg.console.errors() == []


def test_the_overflow_check_can_fail(browser, server_url):
    """The check is not blind: a block 600 px wide in the main area is named, and so is a chart wider than the
    screen."""
    with phone_page(browser, server_url) as pg:
        pg.goto(server_url)
        pg.wait_for_selector('[data-testid="stMain"] .js-plotly-plot')
        wait_idle(pg)
        pg.evaluate("""() => { const p = document.querySelector('[data-testid="stMain"] p');
                               p.style.width = '600px'; p.style.display = 'block';
                               const chart = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
                               chart.style.width = '700px'; }""")
        found = pg.evaluate(OVERFLOW)
        assert any("spans" in f and f.startswith("p ") for f in found), found
        assert any(f.startswith("chart 0") for f in found), found


THREE = """() => { const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const charts = ['encoder', 'decoder', 'cross'].map(p =>
    document.querySelector(`.st-key-ed_three_${p} .js-plotly-plot`));
  if (!main || charts.some(c => !c || !c.layout)) return null;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, width: r.width}; };
  return {main: box(main).width, charts: charts.map(box)}; }"""


def test_the_translators_three_attentions_stack_on_a_phone_and_sit_side_by_side_on_a_laptop(browser, server_url):
    """Three panels side by side in one figure left a phone a third of 390 px each (6 px a cell): they are three
    charts in Streamlit's columns, full width one under another on a phone, side by side on a laptop."""
    for size, phone in ((PHONE, True), ({}, False)):
        with browser_page(browser, server_url, **size) as pg:
            pg.goto(f"{server_url}/encoder-decoder")
            pg.wait_for_function(THREE, timeout=120_000)
            wait_idle(pg)
            seen = pg.evaluate(THREE)
            lefts, tops = [c["left"] for c in seen["charts"]], [c["top"] for c in seen["charts"]]
            if phone:
                assert all(c["width"] >= 0.9 * seen["main"] for c in seen["charts"]), seen
                assert tops[0] < tops[1] < tops[2], seen
                screenshot(pg, "phone_encoder_decoder_three")
            else:
                assert max(tops) - min(tops) < 2 and lefts[0] < lefts[1] < lefts[2], seen
                assert sum(c["width"] for c in seen["charts"]) <= seen["main"] + 1, seen


# -- join a class on a phone, answer in two taps ----------------------------------------------------------------
KEY = "phone-instructor-key"


@pytest.fixture(scope="module")
def class_url(tmp_path_factory):
    db = tmp_path_factory.mktemp("class") / "class.sqlite"
    with streamlit_server("streamlit_phone_class.log", env={"ATTENTION_LAB_INSTRUCTOR_KEY": KEY,
                                                            "ATTENTION_LAB_CLASS_DB": str(db)}) as url:
        yield url


def _lead_and_ask(leader, prompt: str, choices: str) -> str:
    """On a laptop: the instructor key, "Lead the class", then a free question from the sidebar. The class code."""
    code = lead_class(leader, KEY)
    side = leader.locator('[data-testid="stSidebar"]')
    pick_option(leader, side.locator('input[aria-label="Ask the class"]'), "Free question")
    wait_idle(leader)
    side.get_by_role("textbox", name="Question", exact=True).fill(prompt)
    side.get_by_role("textbox", name="Question", exact=True).press("Enter")
    wait_idle(leader)
    side.get_by_role("textbox", name="Choices, one per line").fill(choices)
    side.get_by_role("textbox", name="Choices, one per line").press("Control+Enter")
    wait_idle(leader)
    side.get_by_role("button", name="Ask", exact=True).click()
    return code


def test_a_student_joins_by_the_link_on_a_phone_and_answers_in_two_taps(browser, class_url):
    with phone_page(browser, class_url) as leader:
        leader.set_viewport_size({"width": 1400, "height": 1000})
        leader.goto(class_url)
        leader.wait_for_selector('[data-testid="stApp"]')
        settled(leader)
        code = _lead_and_ask(leader, "Which head looks back one token?", "layer 0 head 1\nlayer 1 head 3")
        with phone_page(browser, class_url) as phone:
            phone.goto(f"{class_url}/?class={code}")  # the page opens: taps are counted from here
            banner = phone.locator('[data-testid="stMain"] .st-key-class_banner')
            expect(banner.get_by_text("Which head looks back one token?")).to_be_visible()
            wait_idle(phone)
            taps = 0
            for target in (banner.get_by_text("layer 1 head 3", exact=True),
                           banner.get_by_role("button", name="Answer", exact=True)):
                target.tap()
                taps += 1
            expect(banner.get_by_text("Your answer is in")).to_be_visible(timeout=30_000)
            assert taps <= 2
            leader.wait_for_function(
                """() => { const el = document.querySelector('[data-testid="stSidebar"] .js-plotly-plot');
                           return el && el._fullData && Array.from(el._fullData[0].x).join() === '0,1'; }""",
                timeout=30_000)
            screenshot(phone, "phone_class_answered")
            assert _check(phone, "joined student") == []
            assert phone.console.errors() == []
