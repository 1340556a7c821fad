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
    """Tab to the panel's button that reads `label` (its icon's name comes first in its text), then Enter."""
    tab_to(page, lambda e: e["tag"] == "BUTTON" and e["label"].split("\n")[-1].strip() == label,
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
