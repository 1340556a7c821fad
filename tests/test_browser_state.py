"""Settings you can trust (#14), in real headless Chromium: every key press on a slider counts; an emptied and retyped
box keeps every other setting, and the chart and caption agree with the controls; a section that reruns on its own
(a fragment) updates the link at once; a link, reopened in a fresh browser, shows the same view (widget values and
chart data); a paste over a box's limit is cut to the limit with a notice.

Each test waits for a condition (a widget's value, a chart's data, the URL), never for a fixed time."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import browser_page, location, open_page, screenshot, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

CHARTS = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def params(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(location(page)).query)


def wait_url(page, name: str, value: str) -> None:
    """Wait until the link says name=value."""
    page.wait_for_function("([n, v]) => new URLSearchParams(location.search).getAll(n).includes(v)", arg=[name, value])


def slider_value(page, label: str) -> str:
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first.input_value()


def chart_titles(page) -> list[str]:
    return page.locator(CHARTS).evaluate_all("els => els.map(el => (el.layout.title || {}).text || '')")


def view(page) -> dict:
    """What the page shows: every widget's value and every chart's data (a digest of the traces), and its address,
    all read in one go (the address read apart could belong to another rerun than the charts)."""
    wait_idle(page)
    return page.evaluate(r"""() => {
        const vals = [...document.querySelectorAll('[data-testid="stMain"] input, [data-testid="stMain"] textarea')]
            .filter(e => e.type !== 'file' && e.type !== 'range').map(e => e.getAttribute('aria-label') + '=' +
                (e.type === 'checkbox' ? e.checked : e.value));
        const sliders = [...document.querySelectorAll('[data-testid="stMain"] [role="slider"]')]
            .map(e => e.value);
        const tabs = [...document.querySelectorAll('[role="tab"][aria-selected="true"]')].map(e => e.innerText);
        const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
            .map(el => JSON.stringify(el._fullData.map(t => [t.name, t.z && Array.from(t.z, r => Array.from(r)),
                                                              t.y && Array.from(t.y)])).length + ':' +
                       ((el.layout.title || {}).text || '').replace(/<\/?b>/g, ''));  // the frontend re-bolds titles
        return {vals, sliders, tabs, charts, url: location.href};
    }""")


def settled_view(page) -> dict:
    """`view` once two readings in a row agree, the address included (a rerun the interaction started has finished
    drawing)."""
    last = view(page)
    for _ in range(30):
        now = view(page)
        if now == last:
            return now
        last = now
    return last


def reopened(browser, url: str, ready: str, n_charts: int) -> dict:
    """The view a fresh browser (a new session) shows for `url`, once `ready` (a selector) and the first view's
    number of charts are there."""
    with browser_page(browser, url.split("/", 3)[0] + "//" + url.split("/", 3)[2]) as fresh:
        fresh.goto(url)
        fresh.wait_for_selector(ready)
        fresh.wait_for_function(f"(n) => document.querySelectorAll('{CHARTS}').length >= n", arg=n_charts)
        return settled_view(fresh) | {"url": url}


def test_five_quick_presses_on_a_slider_are_five_steps(page):
    """Before Streamlit's own binding the hand-written one took the browser's outdated URL for a pasted link: five
    presses registered once (128 -> 136), or the link lagged the slider (checked: with keys held 100 ms, so that
    presses arrive while reruns run, the previous code never wrote 168 into the link)."""
    open_page(page, "sinusoidal")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="number of positions").get_by_role("slider")
    slider.focus()
    for _ in range(5):
        slider.press("ArrowRight", delay=100)  # each key held 100 ms (input pacing, not a wait)
    expect(slider).to_have_value("168")
    wait_url(page, "sinusoidal_npos", "168")
    page.wait_for_function(f"""() => {{ const el = document.querySelectorAll('{CHARTS}')[0];
        return el && el._fullData.length > 0 && el._fullData[0].x && el._fullData[0].x.length === 168; }}""")
    assert slider_value(page, "number of positions") == "168"


def empty_then_retype(page, label: str, empty_message: str, text: str, param: str) -> None:
    """Empty the box (the page stops with `empty_message`), then type `text`: done once the link has it."""
    box = page.locator(f'input[aria-label="{label}"]').first
    box.fill("")
    box.press("Enter")
    page.get_by_text(empty_message).wait_for()
    box.fill(text)
    box.press("Enter")
    wait_url(page, param, text)


def test_an_emptied_and_retyped_sentence_keeps_layer_and_head(page):
    """Start: the page stops at an empty box; before, the selectors it did not draw were reset to 0 / 0 while the
    URL and chart title still said layer 1, head 2."""
    open_page(page, "?start_layer=1&start_head=2")
    empty_then_retype(page, "Type a sentence", "Type at least one word", "I like cats", "start_text")
    page.wait_for_function(f"""() => {{ const el = document.querySelector('{CHARTS}');
        return el && el._fullData[0].z && el._fullData[0].z.length === 4; }}""")  # <bos> I like cats
    selects = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"] input')
    expect(selects.nth(0)).to_have_value("1")
    expect(selects.nth(1)).to_have_value("2")
    assert "layer 1 · head 2" in chart_titles(page)[0].lower()
    assert params(page)["start_layer"] == ["1"] and params(page)["start_head"] == ["2"]


def test_generate_retyped_prompt_keeps_the_strategy_and_its_caption(page):
    """Generate: sampling, T = 0.5, top-k and top-p from a link; clear and retype the prompt: the controls keep them
    and the caption under the chart names them (before: greedy, T = 1.00, boxes unticked, caption still T = 0.5)."""
    open_page(page, "generate?generate_kind=sampling&generate_temperature=0.5&generate_use_k=true&generate_k=5"
                    "&generate_use_p=true&generate_p=0.5&generate_mode=run")
    empty_then_retype(page, "Prompt", "Type a prompt", "the cat sat on the", "generate_text")
    caption = page.get_by_text("after T=0.5, top-k=5, top-p=0.5", exact=False).first
    caption.wait_for()
    expect(page.get_by_role("radio", name="sampling")).to_be_checked()
    expect(page.get_by_role("radio", name="run")).to_be_checked()
    assert slider_value(page, "Temperature") == "0.5"
    for name in ("top-k", "top-p (nucleus)"):
        expect(page.get_by_role("checkbox", name=name)).to_be_checked()
    assert {"generate_kind", "generate_temperature", "generate_use_k", "generate_use_p"} <= set(params(page))


def test_a_fragment_setting_is_in_the_link_at_once(page):
    """RoPE: the extension method lives in a section that reruns on its own; before, the URL kept method=ntk."""
    open_page(page, "rope?rope_tab=Context+extension")
    page.locator("[data-testid=stRadio]").get_by_text("YaRN", exact=True).click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('rope_ext_method') !== null")
    assert "YaRN" in params(page)["rope_ext_method"][0]
    open_page(page, "rope?rope_tab=Pair+rotation")
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="shift both by").get_by_role("slider")
    slider.focus()
    for _ in range(3):
        slider.press("ArrowRight")
    wait_url(page, "rope_shift", "3")


@pytest.mark.parametrize("path, ready, act", [
    ("?start_text=I+like+cats", "text=Where to next", ("select", "Layer", "1")),
    ("explorer", "text=All heads at a glance", ("select", "Head", "1")),
    ("masks", "text=Mask gallery", ("text", "Sliding window")),
    ("qkv", "text=Database lookup", ("select", "Layer", "1")),
    ("sinusoidal", "text=number of positions", ("key", "d_model (even)")),
    ("rope?rope_tab=Pair+rotation", "text=shift both by", ("key", "query position t")),
    ("generate", "text=The next-token distribution", ("button", "Next token ▶")),
    ("encoder", "text=What the encoder would write", ("select", "Layer", "1")),
    ("encoder-decoder", "text=Source sentence", ("button", "Next word ▶")),
    ("recurrence", "text=Sequential dependency", ("tab", "2 · Gradient by distance")),
    ("normalization", "text=Normalization", ("number", "Random seed")),
    ("cost", "text=Cost", ("key", "Layers of the lecture-sized models")),
])
def test_after_an_interaction_the_link_reopens_the_same_view(page, browser, path, ready, act):
    """Every page: one interaction, then the URL opened in a fresh browser shows the same widget values and the same
    chart data."""
    open_page(page, path, wait_chart=False)
    page.wait_for_selector(ready)
    page.wait_for_selector(CHARTS)
    wait_idle(page)
    before = location(page)
    kind, label = act[0], act[1]
    if kind == "select":
        box = page.locator(f'[data-testid="stMain"] input[aria-label="{label}"]').first
        box.click()
        if not page.get_by_role("option").count():  # a combobox lower on the page opens from the keyboard
            box.press("ArrowDown")
        page.get_by_role("option", name=act[2], exact=True).click()
    elif kind == "text":
        page.locator('[data-testid="stMain"]').get_by_text(label, exact=True).first.click()
    elif kind == "key":
        slider = page.locator(f'[data-testid="stMain"] input[type="range"][aria-label="{label}"]').first
        slider.focus()
        for _ in range(2):
            slider.press("ArrowRight")
    elif kind == "number":
        field = page.locator(f'[data-testid="stMain"] input[aria-label="{label}"]').first
        field.fill("5")
        field.press("Enter")
    elif kind == "button":
        page.get_by_role("button", name=label).first.click()
    elif kind == "tab":
        page.get_by_role("tab", name=label).click()
    page.wait_for_function("(u) => location.href !== u", arg=before)
    shown = settled_view(page)
    again = reopened(browser, shown["url"], ready, len(shown["charts"]))
    if again != shown:
        # The first page may still have been between two runs: a slider's second key press is sent after a debounce,
        # and on a busy machine its run can start after two readings agreed (Sinusoidal's chart read at d_model 64
        # under a link that said 66, in one clean-clone run). Read it again now, after the reopen's seconds: the link
        # must reopen the view the page settles on, address included.
        shown = settled_view(page)
    assert again == shown, json.dumps({"shown": shown, "reopened": again})[:3000]


@pytest.mark.parametrize("path, label", [("", "Type a sentence"), ("explorer", "Sentence"), ("generate", "Prompt")])
def test_a_15000_character_paste_is_cut_with_a_notice(page, path, label):
    """Before: the box refused the paste whole (max_chars) and kept the old text, with no message."""
    open_page(page, path)
    box = page.locator(f'input[aria-label="{label}"]').first
    text = ("the cat sat on the mat " * 700)[:15_000]
    box.fill(text)
    box.press("Enter")
    page.get_by_text("The pasted text had 15,000 characters; the box keeps the first 5,000.").wait_for()
    expect(box).to_have_value(text[:5000])
    assert page.locator('[data-testid="stException"]').count() == 0
    if not path:
        screenshot(page, "state_long_paste_start")

