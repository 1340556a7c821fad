"""Keyboard only (#29): on every page, one lesson done with Tab, arrows, Enter and Space, never the mouse. Each page
does what it offers, in this order: type a sentence, pick the layer and the head, switch the mask (or another
choice of options), open another tab, move a slider, and export a chart's data. Every step checks its effect (the
link follows the setting, the tab opens, a CSV is downloaded), and at every Tab stop the focused element shows a
focus ring (viz_model/ui/presenter.py's CSS)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from conftest import open_page, settled

from viz_model.pages import page_urls

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
MAX_TABS = 400  # Tab presses to reach one control (a table takes one stop per column header)
SENTENCE = {"encoder-decoder": "the little bird by the window sang again", "generate": "the dog ate"}

# The focused element, if it is in the page's main area or a popover opened from it, and whether its focus shows.
_FOCUS = """async () => {
    // a control that fades in on focus (a chart's or a table's toolbar) is judged once its fade has ended; a
    // transition that never ends (its promise neither resolves nor rejects) made this evaluate, which has no timeout,
    // wait forever (the suite hung here): each fade gets at most 3 s, and a cancelled one counts as ended
    await Promise.race([
        Promise.all(document.getAnimations().filter(a => a instanceof CSSTransition)
                    .map(a => a.finished.catch(() => null))),
        new Promise(done => setTimeout(done, 3000))]);
    const e = document.activeElement;
    if (!e || !e.closest('[data-testid="stMain"], [data-testid="stPopoverBody"]')
        || e.matches('[data-testid="stMain"]')) return null;
    const s = getComputedStyle(e);
    const label = e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].innerText) || e.innerText;
    return {tag: e.tagName, type: e.type || '', role: e.getAttribute('role') || '', label: (label || '').trim(),
            checked: e.getAttribute('aria-checked') === 'true' || e.getAttribute('aria-selected') === 'true',
            group: !!e.closest('[data-testid="stButtonGroup"]'), in_canvas: !!e.closest('canvas'),
            ring: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2 && s.visibility !== 'hidden'
                  && (() => { for (let a = e; a; a = a.parentElement)
                                  if (getComputedStyle(a).opacity === '0') return false;
                              return true; })()}; }"""


def _page_urls() -> list[str]:
    return page_urls()


def tab_to(page, wanted, what: str) -> dict:
    """Press Tab until the focused element is `wanted` (a predicate on _FOCUS's record); each stop on the way must
    show its focus."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        el = page.evaluate(_FOCUS)
        if el is None:
            continue
        # A table's cell is a canvas's fallback content (Streamlit's data grid draws the table on a canvas, and keeps
        # an unrendered table inside it for screen readers): no CSS outline of it is ever drawn, and whether one was
        # computed depended on how focus reached it (a flaky failure under load). What shows its focus is the grid's
        # own drawing of its selected cell: the focused cell must be the selected one.
        assert el["ring"] or (el["in_canvas"] and el["checked"]), f"no visible focus on {el}"
        if wanted(el):
            return el
    raise AssertionError(f"Tab never reached {what}")


def _has(page, selector: str) -> bool:
    """A control of this kind is on the page and can be seen (not in a closed expander)."""
    return page.evaluate("""sel => [...document.querySelectorAll(sel)].some(e => e.checkVisibility())""",
                         f'[data-testid="stMain"] :is({selector})')


def _search(page) -> str:
    return unquote_plus(page.evaluate("location.search"))


def _changes_link(page, keys) -> None:
    """Press keys on the focused control; the link must change (every main setting is in it)."""
    before = _search(page)
    for key in keys:
        page.keyboard.press(key)
    page.wait_for_function("before => decodeURIComponent(location.search.replace(/\\+/g, ' ')) !== before",
                           arg=before)
    settled(page)


def type_sentence(page, url: str) -> None:
    tab_to(page, lambda e: e["tag"] == "INPUT" and e["type"] == "text" and e["role"] != "combobox", "the sentence box")
    text = SENTENCE.get(url, "the dog sat on the mat")
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    page.wait_for_function("w => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes(w)",
                           arg=text)
    settled(page)


def pick_layer_and_head(page) -> None:
    for name in ("Layer", "Head"):
        tab_to(page, lambda e, n=name: e["role"] == "combobox" and e["label"].lower().endswith(n.lower()),
               f"the {name} picker")
        _changes_link(page, ["ArrowDown", "ArrowDown", "Enter"])  # open the list, the next option, take it


def switch_option(page) -> None:
    """A segmented control (the mask, a strategy): from its picked option the next one, or the first if none is."""
    el = tab_to(page, lambda e: e["role"] == "radio" and e["group"], "a segmented control")
    _changes_link(page, ["ArrowRight", "Space"] if el["checked"] else ["Space"])


def open_another_tab(page) -> None:
    el = tab_to(page, lambda e: e["role"] == "tab" and e["checked"], "the open tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_function("""label => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')]
        .some(t => t.getAttribute('aria-selected') === 'true' && t.innerText.trim() !== label)""", arg=el["label"])
    settled(page)


_VALUE = "() => { const e = document.activeElement; return e.getAttribute('aria-valuenow') || e.value; }"


def move_a_slider(page) -> None:
    """The slider's value moves (checked on the control: not every Train setting is in the link yet, #27)."""
    tab_to(page, lambda e: e["type"] == "range" or e["role"] == "slider", "a slider")
    before = page.evaluate(_VALUE)
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"before => ({_VALUE})() !== before", arg=before)
    settled(page)


def export_a_chart(page) -> None:
    tab_to(page, lambda e: e["tag"] == "BUTTON" and "Export" in e["label"], "a chart's Export")
    page.keyboard.press("Enter")
    page.get_by_text("Data (CSV)").wait_for()
    settled(page)
    tab_to(page, lambda e: e["tag"] == "BUTTON" and "Data (CSV)" in e["label"], "Data (CSV)")
    with page.expect_download() as download:
        page.keyboard.press("Enter")
    assert download.value.suggested_filename.endswith(".csv")


# (control the page must show, the step that uses it)
STEPS = [
    ('[data-testid="stTextInput"] input', type_sentence),
    ('input[role="combobox"][aria-label$="Head"]', lambda page, url: pick_layer_and_head(page)),
    ('[data-testid="stButtonGroup"] [role="radio"]', lambda page, url: switch_option(page)),
    ('[role="tab"]', lambda page, url: open_another_tab(page)),
    ('input[type="range"]:not(:disabled), [role="slider"]:not([aria-disabled="true"])',
     lambda page, url: move_a_slider(page)),
    ('[data-testid="stPlotlyChart"]', lambda page, url: export_a_chart(page)),
]


@pytest.mark.parametrize("url", _page_urls())
def test_one_lesson_with_the_keyboard_alone(page, url):
    open_page(page, "" if url == "start" else url, wait_chart=False)
    settled(page)  # every control drawn before the test looks for them
    done = []
    for selector, step in STEPS:  # in order; each where the page (as the steps before left it) offers it
        if _has(page, selector):
            step(page, url)
            done.append(selector)
    assert len(done) >= 2, done  # every page offers at least two of these
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.console.errors() == []
