"""#39 (3 and 6) in a browser: a student alone answers a lecture step's preset question before the reveal. The
question is asked on the step's own view (a sliding window of 2 on the Masks page), nothing of the model's answer
shows before Check, and after Check the model's answer, computed live, sits beside the student's pick."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ARTIFACTS, browser_page, open_page, settled, streamlit_server

pytestmark = pytest.mark.browser

LECTURE = """---
title: Presets alone
---

## A window of two

view: /masks?masks_kind=Sliding+window&masks_window=2
ask: preset masks_visible

Each query reads itself and the token before it.
"""
SHOTS = Path(os.environ.get("PRESETS_SHOTS", ARTIFACTS / "presets"))


@pytest.fixture(scope="module")
def lecture_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lectures")
    (folder / "presets-alone.md").write_text(LECTURE)
    with streamlit_server("streamlit_presets.log", env={"ATTENTION_LAB_LECTURE_DIRS": str(folder)}) as url:
        yield url


def test_a_student_answers_a_preset_question_in_a_lecture_step_before_the_reveal(browser, lecture_server):
    from playwright.sync_api import expect

    with browser_page(browser, lecture_server) as page:
        open_page(page, "?lecture=presets-alone&step=1")  # the step opens its page with its settings
        settled(page)
        main = page.locator('[data-testid="stMain"]')
        # the step's question: its widgets' keys start lecture_q_<lecture>_<step>_ (Streamlit's st-key-<key> class)
        asked = '[class*="st-key-lecture_q_presets-alone_1_"]'
        question = main.locator(f'{asked} [data-testid="stRadio"]')
        prompt = "Under the Sliding window mask, how many tokens can row 3 (“sat”) see, itself included?"
        expect(main.locator("strong").filter(has_text=prompt)).to_be_visible()
        expect(question.get_by_role("radiogroup")).to_have_attribute("aria-label", prompt)  # read out as shown
        check = main.locator(f'{asked}[class*="_check"] button')
        expect(check).to_be_disabled()  # the student commits first
        assert main.get_by_text("You picked").count() == 0 and main.get_by_text("model's own answer").count() == 0
        def option(text: str):
            return question.locator('[data-testid="stRadioOption"]').filter(has=page.get_by_text(text, exact=True))

        option("4").click()  # a wrong guess
        expect(check).to_be_enabled()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "lecture_preset_before.png"))
        check.click()
        said = main.locator('[data-testid="stAlert"]').filter(has_text="You picked")
        expect(said).to_contain_text("You picked “4”; the model's own answer is “2”. Row 3 may read 2 of the 7 keys")
        page.screenshot(path=str(SHOTS / "lecture_preset_after.png"))
        option("2").click()  # another pick asks again ...
        expect(said).to_have_count(0)
        check.click()  # ... and now agrees with the model
        expect(said).to_contain_text("You picked “2”, as the model does.")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert not page.console.errors(), page.console.errors()
