"""Real headless Chromium (#43, items 5 and 6): on the English model, Generate and Q, K and V show a token that starts
with a space, '*' or '`' exactly as the tokenizer cut it (␣ for its space), and Start labels the byte pieces of an
emoji and Arabic letters with their characters on the heatmap's axes and says that the tokenizer lower-cases."""

from urllib.parse import urlencode

import pytest
from conftest import open_page, screenshot

pytestmark = pytest.mark.browser

ENGLISH = "English (WordNet prose, BPE)"  # the model picker's label is its URL value
QKV_TEXT = "I ate warm bread * _x_ ` $x$"
SHOWN = str.maketrans({" ": "␣"})


def _link(path: str, **query) -> str:
    return f"{path}?{urlencode({'model_key': ENGLISH, **query})}"


def _markdown(page, marker: str):
    """The one Markdown block (st.markdown or st.caption) that holds `marker`, once drawn."""
    block = page.locator('[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]').filter(
        has_text=marker)
    block.first.wait_for()
    assert block.count() == 1, marker
    return block.first


@pytest.fixture(scope="module")
def qkv_tokens():
    from conftest import ROOT

    from viz_model.checkpoint import load_checkpoint
    from viz_model.model_text import encode_for

    english = load_checkpoint(ROOT / "assets" / "models" / "english.safetensors")
    return encode_for(english, QKV_TEXT, bos=True).tokens


def test_generate_shows_the_chosen_token_with_its_leading_space(page):
    open_page(page, _link("generate"))
    sentence = _markdown(page, "The chosen token is orange")
    code = sentence.locator("code")
    assert code.count() == 1 and code.inner_text().startswith("␣")  # the English model's next word: '␣report'
    text = sentence.inner_text()
    assert f"The chosen token is orange: {code.inner_text()} with p" in text and "*" not in text
    screenshot(page, "token_display_generate")
    assert page.console.errors() == []


@pytest.mark.parametrize("query", [5, 7, 12, 13], ids=["space_bread", "star", "backtick", "dollar"])
def test_qkv_shows_the_query_token_exactly(page, qkv_tokens, query):
    token = qkv_tokens[query]
    assert token in (" bread", "*", " `", " $")
    open_page(page, _link("qkv", qkv_text=QKV_TEXT, qkv_query=f"{query} · {token}"))  # the picker's label
    sentence = _markdown(page, "the q of")
    assert sentence.locator("code").first.inner_text() == token.translate(SHOWN)
    assert f"the q of {token.translate(SHOWN)}; keys = the k of every token" in sentence.inner_text()
    assert sentence.locator("em, strong .katex, .katex").count() == 0  # no stray italics, no LaTeX
    if query == 5:
        screenshot(page, "token_display_qkv")
    assert page.console.errors() == []


def test_start_labels_byte_pieces_with_their_characters_and_says_it_lower_cases(page):
    open_page(page, _link("", start_text="My pizza 🍕 مرحبا"))
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.js-plotly-plot .xtick text'))
        .some(t => t.textContent.includes('🍕 (byte 1 of 4)'))""")
    ticks = page.locator(".js-plotly-plot").first.evaluate(
        "el => Array.from(el.querySelectorAll('.xtick text, .ytick text'), t => t.textContent)")
    axis = " ".join(ticks)
    assert all(f"🍕 (byte {k} of 4)" in axis for k in (1, 2, 3, 4)) and "ح (byte 2 of 2)" in axis, ticks
    assert "\ufffd" not in axis
    note = _markdown(page, "lower-cases every text")
    assert "My is read as my" in note.inner_text() and note.locator("code").count() == 2
    screenshot(page, "token_display_start")
    assert page.console.errors() == []
