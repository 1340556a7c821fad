"""The shipped tokenizers: word-level (default) and byte-level BPE."""

import pytest

from viz_model.data import LECTURE_SENTENCES
from viz_model.tokenizer import SPECIAL_TOKENS, encode, load_tokenizer


@pytest.fixture(scope="module")
def word():
    return load_tokenizer("word")


@pytest.fixture(scope="module")
def bpe():
    return load_tokenizer("bpe")


def test_the_cat_sat_on_the_mat_is_six_word_tokens(word):
    enc = encode(word, "The cat sat on the mat")
    assert enc.pieces == ["the", "cat", "sat", "on", "the", "mat"]
    assert enc.ids[0] == enc.ids[4]  # both "the"s are one token


@pytest.mark.parametrize("name", ["word", "bpe"])
def test_special_tokens_have_fixed_ids(name):
    tok = load_tokenizer(name)
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]


def test_typed_pad_becomes_pad_id_zero(word):
    enc = encode(word, "send report <PAD> <PAD>")
    assert enc.pieces == ["send", "report", "<pad>", "<pad>"]
    assert enc.ids[2:] == [0, 0]


@pytest.mark.parametrize("sentence", [*LECTURE_SENTENCES, "please send the"])
def test_lecture_sentences_have_no_unknown_words(word, sentence):
    enc = encode(word, sentence)
    assert enc.unknown == [], f"{sentence!r} has unknown words {enc.unknown}"


def test_word_round_trip_and_punctuation_is_separate(word):
    enc = word.encode("Hi Anna, please send the report today.")
    assert enc.tokens == ["hi", "anna", ",", "please", "send", "the", "report", "today", "."]
    assert word.decode(enc.ids) == "hi anna, please send the report today."


def test_unknown_word_becomes_unk_but_keeps_its_label(word):
    enc = encode(word, "the zebra sat")
    assert enc.pieces[1] == "<unk>" and enc.tokens[1] == "zebra"


def test_bpe_round_trips_any_text_and_splits_rare_words(bpe):
    text = "the trophy didn't fit in the suitcase, zebras!"
    assert bpe.decode(bpe.encode(text).ids) == text.lower()
    assert len(bpe.encode("antidisestablishment").ids) > 1
