"""How tokens are shown (#43, items 5 and 6): a token inside Markdown shows exactly as typed (one helper,
model_text.md_token / md_text), and the byte pieces of a character a byte-level BPE split show as that character,
on the English model and on a GPT-2 style model folder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from markdown_it import MarkdownIt
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from viz_model.model_text import encode_for

MARKDOWN = MarkdownIt("commonmark")
TOKENS = [" sun", "*", "_x_", "`", "<b>x</b>", "$x$", ":red[x]", "a&amp;b", "``x`", "* bread*", "**", " ", "x\ny"]
SHOWN = str.maketrans({" ": "␣", "\n": "↵"})
MIXED = "I ate 🍕 مرحبا"


def md_token(token: str) -> str:
    from viz_model.model_text import md_token as helper  # imported here: the old code's pages run without it

    return helper(token)


def md_text(text: str) -> str:
    from viz_model.model_text import md_text as helper

    return helper(text)


def rendered(source: str) -> tuple[str, set[str]]:
    """The text a reader sees of one line of Markdown, and the kinds of inline elements it became."""
    children = MARKDOWN.parseInline(source)[0].children or []
    text = "".join(c.content if c.type in ("text", "code_inline") else "\n" if c.type == "softbreak" else ""
                   for c in children)
    return text, {c.type for c in children}


# -- item 5: one helper -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", TOKENS)
def test_a_token_in_markdown_shows_exactly_as_typed_with_its_spaces_visible(token):
    text, kinds = rendered(f"The chosen token is orange: {md_token(token)} with p = 0.5.")
    assert text == f"The chosen token is orange: {token.translate(SHOWN)} with p = 0.5."
    assert kinds <= {"text", "code_inline"}  # no emphasis, no HTML, no link
    bold, kinds = rendered(f"**{md_token(token)}**")  # also inside emphasis a page puts around it
    assert bold == token.translate(SHOWN) and "strong_open" in kinds


def test_the_empty_token_and_streamlits_icon_syntax_stay_visible():
    assert rendered(md_token(""))[0] == "∅"
    shown = md_token(":material/home:")
    assert ":material/" not in shown  # Streamlit's frontend turns that text into an icon, even inside code
    assert rendered(shown)[0].replace("\u2060", "") == ":material/home:"


@pytest.mark.parametrize("typed", TOKENS + [":material/home: 1. # - > |a|b|", "[x](http://y) ![i](j) ~~s~~"])
def test_typed_text_in_prose_shows_exactly_as_typed(typed):
    text, kinds = rendered(f"In words: {md_text(typed)} end")
    assert text == f"In words: {typed} end" and kinds <= {"text", "softbreak"}
    assert ":material/" not in md_text(typed)


def test_the_generate_sentence_shows_a_token_that_starts_with_a_space():
    """Generate said "The chosen token is orange: ** sun**": the bold broke on the leading space."""
    from viz_model.generate import GREEDY
    from viz_model.lessons.common import StepView
    from viz_model.lessons.generate import step_sentence

    view = StepView(4, 7, " sun", -0.9, [" sun"], np.array([0.4]), np.array([1.0]), 0, np.zeros((1, 1, 4)), None)
    text, _ = rendered(step_sentence(view, 0, GREEDY))
    assert "The chosen token is orange: ␣sun with p = 0.400." in text and "*" not in text


def test_the_qkv_sentences_show_tokens_that_start_with_a_space():
    """Q, K and V said "the q of * bread*"."""
    from viz_model.lessons import qkv

    text, _ = rendered(qkv.lookup_text(" bread"))
    assert "the q of ␣bread;" in text and "*" not in text
    pair = qkv.PairResult(" *a* cat", "the mat_ ", " sat", 2, 1, {}, {})
    text, _ = rendered(qkv.pair_text(pair))
    assert "shared word ␣sat (position 2) in “ *a* cat” and in “the mat_ ”" in text


# -- item 6: byte pieces read as the characters they make ----------------------------------------------------------
def _assert_characters(tokens: list[str]) -> None:
    joined = " ".join(tokens)
    assert "\ufffd" not in joined and "🍕" in joined and all(ch in joined for ch in "مرحبا"), tokens
    assert not set(joined) & {"Ø", "Ù", "ð", "Ł", "§"}, tokens  # no raw byte-level symbols either
    assert [t for t in tokens if t.startswith("🍕")] == [f"🍕 (byte {k} of 4)" for k in (1, 2, 3, 4)]


def test_emoji_and_arabic_read_as_their_characters_on_the_english_model(english_model):
    enc = encode_for(english_model, MIXED, bos=True)
    _assert_characters(enc.tokens)
    _assert_characters(enc.pieces)  # the token table's "vocabulary entry" row
    from viz_model.model_text import sequence_texts

    assert sequence_texts(english_model, enc.ids) == enc.tokens


def test_emoji_and_arabic_read_as_their_characters_on_a_gpt2_folder(model_folders):
    from viz_model.checkpoint import load_checkpoint

    gpt2 = load_checkpoint(model_folders["tiny-gpt2"])
    enc = encode_for(gpt2, MIXED, bos=True)
    _assert_characters(enc.tokens)
    assert enc.tokens[:3] == ["<|endoftext|>", "I", "␣ate"]  # whole tokens keep the folder's ␣ marks


def test_a_character_cut_by_the_context_still_names_its_bytes(english_model):
    enc = encode_for(english_model, "ok 🍕", max_len=5)  # ␣o k ␣ and the first two of the pizza's four bytes
    assert enc.truncated and enc.tokens[-2:] == ["🍕 (byte 1 of 4)", "🍕 (byte 2 of 4)"]


def _merging_bpe() -> Tokenizer:
    """A byte-level BPE whose merges make pieces of several bytes: 'ðŁį' (the pizza's first three bytes) and 'ħØ'
    (the last byte of م with the first of ر)."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = [("ð", "Ł"), ("ðŁ", "į"), ("ħ", "Ø")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def test_pieces_of_several_bytes_name_the_bytes_they_hold():
    from viz_model.tokenizer import token_labels

    tok = _merging_bpe()
    ids = tok.encode("🍕 مر").ids
    assert token_labels(tok, ids) == ["🍕 (bytes 1–3 of 4)", "🍕 (byte 4 of 4)", " ", "م (byte 1 of 2)",
                                      "م (byte 2 of 2) + ر (byte 1 of 2)", "ر (byte 2 of 2)"]
    assert token_labels(tok, ids[:1]) == ["� (bytes 1–3 of a cut character)"]  # generation stopped inside it


def test_the_lower_casing_tokenizer_says_so_beside_its_tokens(english_model, model_folders):
    from viz_model.checkpoint import load_checkpoint
    from viz_model.model_text import case_note

    note = case_note(encode_for(english_model, "My grandmother met MY friend", bos=True))
    assert note is not None and "lower-cases" in note and "`My` is read as `my`" in note and "`MY`" in note
    assert case_note(encode_for(english_model, "all lower case here")) is None
    gpt2 = load_checkpoint(model_folders["tiny-gpt2"])  # no normalizer: keeps case, says nothing
    assert case_note(encode_for(gpt2, "My grandmother")) is None


# -- the pages ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def english_app():
    from conftest import open_app

    at = open_app()
    at.session_state["model_key"] = "english"
    return at


def test_start_shows_the_pizza_in_its_token_table_and_on_its_axes_and_the_lower_casing(english_app):
    at = english_app.switch_page("app_pages/start.py").run()
    at = at.text_input(key="start_text").set_value("My pizza 🍕").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "token" in list(d.value.iloc[:, 0]))
    cells = table.iloc[0].tolist()
    assert "🍕 (byte 1 of 4)" in cells and not any("\ufffd" in str(c) for c in cells)
    charts = json.dumps([json.loads(c.proto.spec) for c in at.get("plotly_chart")], ensure_ascii=False)
    assert "🍕 (byte 4 of 4)" in charts and "\ufffd" not in charts
    assert any("`My` is read as `my`" in c.value for c in at.caption)


def test_generate_shows_the_chosen_token_with_its_space():
    """On Generate's own default prompt: a session of its own (in the module's session, the pizza typed on Start is
    carried to Generate's prompt as the session's sentence, #39, and the next token is a byte of the emoji)."""
    from conftest import open_app

    at = open_app()
    at.session_state["model_key"] = "english"
    at = at.switch_page("app_pages/generate.py").run()
    assert not at.exception
    sentence = next(m.value for m in at.markdown if "The chosen token is orange" in m.value)
    text, kinds = rendered(sentence)
    assert "code_inline" in kinds and "**" not in text
    assert "The chosen token is orange: ␣" in text  # the English model's next word starts with its space


def test_qkv_shows_the_query_token_with_its_space(english_app):
    at = english_app.switch_page("app_pages/qkv.py").run()
    at = at.text_input(key="qkv_text").set_value("I ate warm bread").run()
    assert not at.exception
    sentence = next(m.value for m in at.markdown if "the q of" in m.value)
    assert "the q of ␣bread;" in rendered(sentence)[0]
