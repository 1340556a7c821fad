"""Hostile and odd input on every page: a clear message, nothing lost, never a traceback."""


import pytest
from conftest import ROOT, texts

from viz_model.pages import page_files

HOSTILE = [
    "",
    "   \n\t ",
    "x " * 5000,                                   # 10,000 characters
    "😀🎉 👩‍👩‍👧 cats",                              # emoji, ZWJ sequences
    "مرحبا بالعالم hello",                         # right-to-left text
    "e\u0301 n\u0303 combining",                   # combining marks
    "zero\u200bwidth\u200d and \u202eRTL override",  # zero-width and bidi control characters
    "ctrl\x00\x07\x1b[31m chars",                  # control characters
    "<script>alert(1)</script>",
    "<b>x</b> &amp; <pad> <PAD> <eos>",
]


def _pages() -> list[str]:
    return page_files()


@pytest.mark.parametrize("page_file", _pages())
def test_every_text_box_survives_hostile_input(app_test, page_file):
    at = app_test(None if page_file.endswith("start.py") else page_file)
    assert not at.exception, page_file
    boxes = [("text_input", w.key) for w in at.text_input if w.key] + [("text_area", w.key) for w in at.text_area
                                                                         if w.key]
    for kind, key in boxes:
        for text in HOSTILE:
            widget = getattr(at, kind)(key=key)
            widget.set_value(text[: widget.max_chars] if widget.max_chars else text).run()
            assert not at.exception, (page_file, key, text[:30])
            assert not any("Traceback" in e.value for e in at.error), (page_file, key)


@pytest.mark.parametrize("query", [{"layer": "-1"}, {"head": "9999"}, {"model": "../../etc/passwd"},
                                   {"presenter": "maybe"}, {"text": "<script>alert(1)</script>"}, {"k": "NaN"}])
def test_garbage_query_parameters_fall_back_to_defaults(query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    assert not at.error


# -- typed special tokens: plain text, and the page says so --------------------------------------------------------
SPECIALS = "the cat <eos> sat <pad> <PAD> <bos> <unk> <mask> on the mat"
LITERAL_NOTICE = "`<eos>` typed in the text is read as plain text, not as the end-of-sequence token"
KEPT = {"masks_text": "<pad>", "encoder_text": "<mask>"}  # the lessons that ask a student to type one
NOT_ENCODED = {"train_ckpt_name", "lecture_rec_title", "lecture_rec_name"}  # a file name; a recorded lecture's titles
# (the sidebar's "Record a lecture", on every page): not text for a model
BOXES = {"app_pages/start.py": ["start_text"], "app_pages/explorer.py": ["explorer_text"],
         "app_pages/masks.py": ["masks_text"], "app_pages/qkv.py": ["qkv_text", "qkv_pair_a", "qkv_pair_b"],
         "app_pages/encoder.py": ["encoder_text"], "app_pages/encoder_decoder.py": ["ed_text"],
         "app_pages/normalization.py": ["norm_text"], "app_pages/generate.py": ["generate_text", "generate_tf_text"],
         "app_pages/lens.py": ["lens_text"], "app_pages/attribution.py": ["attribution_text"]}
IN_TABS = {  # text boxes drawn only in a tab or after a choice: (tab key, tab label, (widget, key, option index))
    "app_pages/generate.py": ("generate_tab", "Teacher forcing vs free running", ("radio", "generate_mode", 1)),
    "app_pages/qkv.py": ("qkv_tab", "Minimal pairs", ("selectbox", "qkv_pair", -1)),
    "app_pages/normalization.py": ("norm_tab", "The batch dimension", None),
}


def _notices(at) -> list[str]:
    return [i.value for i in at.info if "read as plain text" in i.value]


@pytest.mark.parametrize("page_file", _pages())
def test_typed_special_tokens_are_plain_text_with_a_notice(app_test, page_file):
    at = app_test(None if page_file.endswith("start.py") else page_file)
    if page_file in IN_TABS:
        tab_key, label, setup = IN_TABS[page_file]
        at.session_state[tab_key] = label
        at.run()
        if setup:  # generate: run mode (the tabs show once a step has run); qkv: type your own pair
            widget = getattr(at, setup[0])(key=setup[1])
            widget.set_value(widget.options[setup[2]]).run()
    keys = [w.key for w in at.text_input if w.key and w.key not in NOT_ENCODED]
    assert keys == BOXES.get(page_file, []), page_file  # every text box a model reads is checked
    if not keys:  # a page with no text box a model reads (the Train page's needs a run): the listing is the check
        return
    assert not _notices(at), page_file  # nothing typed yet: no notice
    for key in keys:
        at.text_input(key=key).set_value(SPECIALS).run()
        assert not at.exception, (page_file, key)
        assert not any("Traceback" in e.value for e in at.error), (page_file, key)
        notices = _notices(at)
        assert notices and LITERAL_NOTICE in notices[0], (page_file, key, texts(at.info))
        assert "`<PAD>` typed in the text" in notices[0] or key in KEPT, (page_file, key)
        if key in KEPT:
            assert f"Here only `{KEPT[key]}` typed is read as the token itself" in notices[0], (page_file, key)
        at.text_input(key=key).set_value("the cat sat on the mat").run()  # and gone with the specials
        assert not _notices(at), (page_file, key)


def test_start_page_chips_show_a_typed_eos_as_text(app_test):
    at = app_test()
    at.text_input(key="start_text").set_value("the cat <eos> sat").run()
    chips = at.dataframe[0].value  # the page's first table (#43: the sentence comes first): token, entry, id
    token, piece, ids = (list(chips.iloc[i, 1:]) for i in range(3))
    assert token == ["<bos>", "the", "cat", "<", "eos", ">", "sat"]
    assert "3" not in ids and piece[3:6] == ["<unk>"] * 3  # <eos> is id 3: a student's text never holds it


def test_generate_does_not_continue_past_a_typed_eos(app_test):
    at = app_test("app_pages/generate.py")
    at.radio(key="generate_mode").set_value("run").run()
    at.text_input(key="generate_text").set_value("please send <eos> the").run()
    assert not at.exception and LITERAL_NOTICE in _notices(at)[0]
    assert texts(at.code)[0].startswith("<bos> please send <unk> <unk> <unk> the")  # the text goes on after it


# -- a 5,000-character word: named short in the <unk> notice (#26 finding 8) ---------------------------------------
LONG_WORD = "q" * 4000  # with the sentence around it, under the boxes' 5,000-character limit
UNK_PAGES = {"app_pages/qkv.py": "qkv_text", "app_pages/encoder.py": "encoder_text",
             "app_pages/normalization.py": "norm_text", "app_pages/generate.py": "generate_text",
             "app_pages/encoder_decoder.py": "ed_text", "app_pages/lens.py": "lens_text",
             "app_pages/attribution.py": "attribution_text"}


@pytest.mark.parametrize("page_file", sorted(UNK_PAGES))
def test_a_huge_unknown_word_is_named_short(app_test, page_file):
    at = app_test(page_file)
    if page_file in IN_TABS and IN_TABS[page_file][2] is None:  # a box drawn in a tab: open it
        at.session_state[IN_TABS[page_file][0]] = IN_TABS[page_file][1]
        at.run()
    if page_file == "app_pages/encoder.py":  # the toy encoder: the English one (the default) has no unknown words
        at.selectbox(key="encoder_model").select("encoder-mlm").run()
    at.text_input(key=UNK_PAGES[page_file]).set_value(f"the zebra {LONG_WORD} sat").run()
    assert not at.exception, page_file
    notice = next(c.value for c in at.caption if "never seen" in c.value)
    assert "`zebra`" in notice and "(4,000 characters)" in notice, notice[:200]
    assert len(notice) < 200, len(notice)  # it was 4,000+ characters: the word printed whole


def test_unknown_words_text_names_each_once_and_counts_the_rest():
    from viz_model.model_text import NOTICE_WORDS, unknown_words_text

    words = [f"w{i}" for i in range(NOTICE_WORDS + 3)]
    text = unknown_words_text(["w0", *words])
    assert text.count("`w0`") == 1 and text.endswith(" and 3 more")
    assert unknown_words_text(["a`b"]) == "``a`b``"  # a longer fence: the backtick shows and cannot end the span
