"""#43 item 4: a page says what its model can read. The Encoder–decoder's translator speaks a toy language: the page
says so up front, with the number of words counted in its tokenizer, and opens on its sentence picker; no page
promises "any sentence" where the model on it cannot read one."""

import re

import pytest
from conftest import ROOT, assert_clean, open_app, texts

from viz_model import ASSETS_DIR, checkpoint, data
from viz_model.lessons import encoder_decoder as lesson

TRANSLATOR = ASSETS_DIR / "models" / "translate.safetensors"
PROMISES = re.compile(r"any (english )?sentence|any text you type", re.I)


@pytest.fixture(scope="module")
def translator():
    return checkpoint.load_checkpoint(TRANSLATOR)


def test_the_translator_says_up_front_it_speaks_a_toy_language_of_n_words(translator):
    at = open_app("app_pages/encoder_decoder.py", timeout=120)
    assert_clean(at)
    vocab = translator.tokenizer.get_vocab()
    n_toy = len(set(data.target_vocabulary()) & set(vocab))
    n_english = len({*data.WORD_CLASSES, *(w for pair in data.MULTIWORD for w in pair)} & set(vocab))
    assert n_toy > 50 and n_english > 50
    first = next(t for t in texts(at.markdown) if "toy language of" in t)  # up front, before the sentence box
    assert f"toy language of {n_toy} words" in first and f"{n_english} English words" in first
    assert (n_english, n_toy) == lesson.toy_vocabulary(translator.tokenizer)
    picker = at.selectbox(key="ed_example")
    assert picker.label == "Sentence of the toy language" and picker.value == lesson.EXAMPLES[0]
    assert at.text_input(key="ed_text").value == lesson.EXAMPLES[0]


def _sidebar_and_page(at) -> str:
    return " ".join(texts(at.markdown) + texts(at.caption) + texts(at.info) + texts(at.sidebar.caption))


@pytest.mark.parametrize("page", ["app_pages/encoder_decoder.py", "app_pages/encoder.py"])
def test_no_page_promises_any_sentence_where_its_model_has_a_word_vocabulary(page):
    """#43: the sidebar said the English model reads 'any sentence you type, no <unk>' beside the toy translator."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["model_key"] = "english"  # the sidebar on the English model, whose caption said it
    at.run()
    at = at.switch_page(page).run()
    assert "English" in " ".join(texts(at.sidebar.caption)) or "BPE" in " ".join(texts(at.sidebar.caption))
    if page.endswith("encoder.py") and "encoder_model" in [s.key for s in at.selectbox]:
        at = at.selectbox(key="encoder_model").select("encoder-mlm").run()  # the toy encoder, word-level
    assert_clean(at)
    assert not PROMISES.search(_sidebar_and_page(at)), PROMISES.search(_sidebar_and_page(at))


def test_no_source_promises_any_sentence():
    """The same promise is not written anywhere the app shows text from (model descriptions, pages, lessons)."""
    for path in [*ROOT.glob("app_pages/*.py"), *ROOT.glob("viz_model/**/*.py"), *ASSETS_DIR.glob("models/*.json")]:
        text = path.read_text(encoding="utf-8")
        assert not PROMISES.search(text), (path.name, PROMISES.search(text))
