"""Every page that takes a sentence works on the English model (AppTest), and a word model's <unk> notice offers one
click to it with the same sentence (#24)."""

from __future__ import annotations

import json

import pytest

SENTENCE = "The animal didn't cross the street because it was too tired 🐾"
PAGES = {"app_pages/start.py": "start_text", "app_pages/explorer.py": "explorer_text",
         "app_pages/masks.py": "masks_text", "app_pages/qkv.py": "qkv_text", "app_pages/generate.py": "generate_text",
         "app_pages/lens.py": "lens_text", "app_pages/attribution.py": "attribution_text"}


def _charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _all_text(at) -> str:
    return " ".join(str(getattr(e, "value", "")) for kind in ("caption", "markdown", "info", "warning")
                    for e in getattr(at, kind))


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_runs_on_the_english_model_with_no_unknown_words(app_test, page):
    at = app_test()
    at.session_state["model_key"] = "english"
    at.switch_page(page).run()
    at.text_input(key=PAGES[page]).set_value(SENTENCE).run()
    assert not at.exception, at.exception
    assert at.session_state["model_key"] == "english"
    assert "never seen" not in _all_text(at)  # no <unk> notice (the sidebar says "no <unk>" of this model)
    assert _charts(at), "no chart drawn"
    labels = json.dumps([c["layout"] for c in _charts(at)] + [c["data"] for c in _charts(at)])
    assert "animal" in labels  # the word the classroom model could not read is a token of its own


def test_start_shows_the_measurements_with_computed_marks(app_test):
    at = app_test()
    at.session_state["model_key"] = "english"
    at.switch_page("app_pages/start.py").run()
    table = next(d.value for d in at.dataframe if "held-out text" in d.value.columns)  # the measured quality
    assert list(table["held-out text"]) == ["WordNet test split (never trained on)", "Python's docs (another source)"]
    ratio = float(table["÷ bigram"][0])
    assert ratio == pytest.approx(float(table["perplexity"][0]) / float(table["bigram model"][0]), abs=0.01)
    marks = [e.value for e in (*at.success, *at.error) if "(goal: " in e.value]
    assert len(marks) == 4 and all(m.startswith("✓") for m in marks), marks  # every goal reached, each computed
    assert any("One head reads the token before: layer 0" in m and "on held-out English text" in m for m in marks)
    at.button(key="start_measure").click().run()  # measured again here: the same numbers
    live = [d.value for d in at.dataframe if "held-out text" in d.value.columns][1]
    assert list(live["perplexity"]) == list(table["perplexity"])


def test_unknown_words_offer_the_english_model_with_the_same_sentence(app_test):
    at = app_test()
    at.text_input(key="start_text").set_value("The animal didn't cross the street").run()
    assert at.session_state["model_key"] == "classroom"
    notice = next(c.value for c in at.caption if "never seen" in c.value)
    assert "`animal`" in notice and "`cross`" in notice and "`street`" in notice
    at.button(key="unknown_to_english").click().run()
    assert not at.exception
    assert at.session_state["model_key"] == "english"
    assert at.session_state["start_text"] == "The animal didn't cross the street"
    assert not any("never seen" in c.value for c in at.caption)
    assert not [b for b in at.button if b.key == "unknown_to_english"]  # nothing left to offer


def test_explorer_compares_the_english_bpe_with_the_word_tokenizer(app_test):
    at = app_test()
    at.session_state["model_key"] = "english"
    at.switch_page("app_pages/explorer.py").run()
    at.text_input(key="explorer_text").set_value("The animal didn't cross the street").run()
    radio = at.radio(key="explorer_tokenizer")
    assert radio.value == "bpe"  # this model's own, so nothing else is shown
    radio.set_value("word").run()
    table = next(d.value for d in at.dataframe if "word piece" in d.value.index)
    assert "<unk>" in list(table.loc["word piece"]) and "animal" not in " ".join(map(str, table.loc["word piece"]))
    assert any("knows only its corpus's words" in c.value for c in at.caption)
