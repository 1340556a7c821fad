"""Real headless Chromium against `streamlit run`: "<eos>" typed mid-prompt on Generate is plain text, and the page
says so; the model continues the whole prompt (it is not an end of text)."""

import pytest
from conftest import open_page, screenshot, wait_idle

pytestmark = pytest.mark.browser

NOTICE = "<eos> typed in the text is read as plain text, not as the end-of-sequence token"
KEY_TICKS = """() => { const p = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
                         .find(el => el._fullData && el._fullData.some(t => t.name === 'attention'));
                       return p ? Array.from(p.layout.xaxis.ticktext) : null; }"""


def test_a_typed_eos_mid_prompt_is_text_with_a_notice_and_generation_reads_past_it(page):
    open_page(page, "generate", wait_chart=False)
    box = page.get_by_label("Prompt", exact=True).and_(page.get_by_test_id("stTextInputField"))
    box.fill("please send <eos> the")
    box.press("Enter")
    page.wait_for_function("""text => [...document.querySelectorAll('[data-testid="stAlert"]')]
                                          .some(a => a.innerText.includes(text))""", arg=NOTICE)
    code = page.locator('[data-testid="stCode"]').first
    page.wait_for_function("""() => { const c = document.querySelector('[data-testid="stCode"]');
                                      return c && c.innerText.includes('please send'); }""")
    # the prompt as the model reads it: '<', 'eos', '>' are three words it does not know, not its end token
    assert code.inner_text().startswith("<bos> please send <unk> <unk> <unk> the")
    page.wait_for_function(f"() => ({KEY_TICKS})() !== null")
    wait_idle(page)
    ticks = page.evaluate(KEY_TICKS)
    assert ticks[:7] == ["0 &lt;bos&gt;", "1 please", "2 send", "3 &lt;", "4 eos", "5 &gt;", "6 the"]
    assert len(ticks) >= 7 and not page.get_by_text("has nothing to continue").count()
    screenshot(page, "generate_typed_eos")
    assert page.console.errors() == []
