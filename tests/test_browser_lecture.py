"""#39 (3): a student steps through a lecture with the keyboard alone: Tab to Next (or Back), Enter. Each step's panel
says where the student is, and the link carries the step and the step's page, so every step is a link."""

from __future__ import annotations

import pytest
from conftest import open_page, settled
from test_browser_keyboard import tab_to

from viz_model.lectures import builtin_lectures

pytestmark = pytest.mark.browser

LECTURE = builtin_lectures()["attention"]
N = len(LECTURE.steps)

# The panel says "step n of N", the link has step=n, and the page is the step's page.
_AT_STEP = """([n, total, path]) => document.querySelector('[data-testid="stMain"]').innerText
                                          .includes(`step ${n} of ${total}`)
    && new URLSearchParams(location.search).get('step') === String(n)
    && new URLSearchParams(location.search).get('lecture') === 'attention'
    && location.pathname.replace(/\\/$/, '').endsWith('/' + path)"""


def _at_step(page, n: int) -> None:
    page.wait_for_function(_AT_STEP, arg=[n, N, LECTURE.steps[n - 1].page])
    settled(page)
    assert page.locator('[data-testid="stException"]').count() == 0


def _press(page, label: str) -> None:
    """Tab to the panel's button that reads `label` (its text: the icon's name, the label, the arrow-key hint), then
    Enter."""
    tab_to(page, lambda e: e["tag"] == "BUTTON" and label in [t.strip() for t in e["label"].split("\n")],
           f"the lecture's {label} button")
    page.keyboard.press("Enter")


def test_a_student_steps_forward_and_back_with_the_keyboard(page):
    open_page(page, "?lecture=attention&step=1", wait_chart=False)
    _at_step(page, 1)
    for n in (2, 3):
        _press(page, "Next")
        _at_step(page, n)
    _press(page, "Back")
    _at_step(page, 2)


def test_the_arrow_keys_step_but_not_while_a_text_box_or_slider_has_the_focus(page):
    """Right is Next, Left is Back (Streamlit's button shortcut). An arrow in a text box moves the caret and one on a
    slider moves the slider: neither steps. No sleep: a stray step would put every later step one off."""
    open_page(page, "?lecture=attention&step=1", wait_chart=False)
    _at_step(page, 1)
    page.keyboard.press("ArrowRight")
    _at_step(page, 2)
    page.keyboard.press("ArrowRight")
    _at_step(page, 3)
    page.keyboard.press("ArrowLeft")
    _at_step(page, 2)
    box = page.locator('[data-testid="stMain"] .st-key-qkv_text input')
    box.click()
    box.press("End")
    box.press("ArrowLeft")  # the caret moves one back; Back must not fire
    assert box.evaluate("e => e.selectionStart") == len(box.input_value()) - 1
    box.evaluate("e => e.blur()")
    page.keyboard.press("ArrowRight")
    _at_step(page, 3)  # from step 2: the arrow in the box did not step
    for n in (4, 5):
        page.keyboard.press("ArrowRight")
        _at_step(page, n)
    slider = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input').first  # step 5: d_model
    before = slider.input_value()
    slider.focus()
    slider.press("ArrowRight")  # the slider moves; Next must not fire
    page.wait_for_function("v => new URLSearchParams(location.search).get('sinusoidal_d') === v",
                           arg=str(int(before) + 2))
    slider.evaluate("e => e.blur()")
    page.keyboard.press("ArrowLeft")
    _at_step(page, 4)  # from step 5: the arrow on the slider did not step


_SCALE_ON = """on => document.querySelector('[data-testid="stMain"] .st-key-explorer_scale input')?.checked === on"""


def test_a_step_after_a_step_on_the_same_page_opens_with_its_own_settings_and_keeps_them(page):
    """Step 3 opens the Explorer with the scale switched off; step 4 is the Explorer again, scale at its default (on).
    Forgetting step 3's value on the server was not enough: the browser kept the toggle off (its own copy of the
    value) while the page was computed with it on, and sent "off" back with the next rerun. The toggle must read on
    at step 4 and stay on through a rerun of the head view (a Head pick sends the browser's values back)."""
    from test_browser_class_follow import pick_key

    open_page(page, "?lecture=attention&step=3", wait_chart=False)
    _at_step(page, 3)
    page.wait_for_function(_SCALE_ON, arg=False)
    page.keyboard.press("ArrowRight")
    _at_step(page, 4)
    page.wait_for_function(_SCALE_ON, arg=True)
    pick_key(page, "explorer_head", "2")
    page.wait_for_function("() => new URLSearchParams(location.search).get('explorer_head') === '2'")
    settled(page)
    assert page.evaluate(_SCALE_ON, True), "the step's scale went back to the student's earlier setting"
    assert new_query(page).get("explorer_scale") != "false"


def new_query(page) -> dict[str, str]:
    return dict(page.evaluate("() => Object.fromEntries(new URLSearchParams(location.search))"))
