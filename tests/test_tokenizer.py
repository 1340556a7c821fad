"""The shipped tokenizers: word-level (default) and byte-level BPE; typed special tokens are plain text."""

import pytest
import torch
from conftest import _folder_bpe

from viz_model import tokenizer as T
from viz_model.data import LECTURE_SENTENCES
from viz_model.tokenizer import MASK, PAD, SPECIAL_TOKENS, encode, extend_word_vocab, load_tokenizer


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


def test_typed_pad_is_text_unless_the_lesson_keeps_it(word):
    enc = encode(word, "send report <PAD> <PAD>")
    assert 0 not in enc.ids and enc.tokens == ["send", "report", "<", "PAD", ">", "<", "PAD", ">"]
    assert enc.literal == [("<PAD>", "<pad>")]
    kept = encode(word, "send report <PAD> <PAD>", specials=(PAD,))  # the Masks page: its Padding mask hides pads
    assert kept.pieces == ["send", "report", "<pad>", "<pad>"] and kept.ids[2:] == [0, 0] and kept.literal == []


# -- typed special tokens: every tokenizer kind reads them as text ------------------------------------------------
def _tokenizers():
    """name -> (tokenizer, the special spellings to type, the text each stands for)."""
    word, bpe = load_tokenizer("word"), load_tokenizer("bpe")
    ours = ["<pad>", "<PAD>", "<eos>", "<bos>", "<unk>", "<mask>", "<EOS>"]
    gpt2 = _folder_bpe([], True, ["<|endoftext|>"])             # GPT-2: byte-level, one special
    llama = _folder_bpe(["<s>", "</s>", "<unk>"], False)        # Llama 2 / Mistral: SentencePiece-style with <unk>
    return {"word": (word, ours), "bpe": (bpe, ours), "word+toy": (extend_word_vocab(word, ["ethay"]), ours),
            "gpt2 folder": (gpt2, ["<|endoftext|>"]), "llama folder": (llama, ["<s>", "</s>", "<unk>"])}


TOKENIZERS = _tokenizers()
CASES = [(name, typed) for name, (_, spellings) in TOKENIZERS.items() for typed in spellings]


def _forbidden(tok) -> set[int]:
    """Ids a typed text must not produce: every special token's, except the id an unknown word gets anyway."""
    special = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    unk = getattr(tok.model, "unk_token", None)
    return special - ({tok.token_to_id(unk)} if unk else set())


@pytest.mark.parametrize(("name", "typed"), CASES)
def test_a_typed_special_token_is_plain_text(name, typed):
    tok, _ = TOKENIZERS[name]
    canonical = next(t.content for t in tok.get_added_tokens_decoder().values() if t.content.lower() == typed.lower())
    enc = encode(tok, f"the {typed} cat", bos=True)
    assert not set(enc.ids[1:]) & _forbidden(tok), (enc.tokens, enc.ids)
    assert typed not in enc.tokens[1:] and canonical not in enc.pieces[1:] or canonical == "<unk>"
    assert len(enc.ids) > 4  # the spelling is split into pieces, as any word the tokenizer does not know
    assert enc.literal == [(typed, canonical)] == T.typed_specials(tok, f"the {typed} cat")


@pytest.mark.parametrize("name", [n for n, (_, spellings) in TOKENIZERS.items() if "<unk>" in spellings])
def test_a_typed_unk_is_split_like_an_unknown_word(name):
    tok, spellings = TOKENIZERS[name]
    enc = encode(tok, "a <unk> b")
    assert "<unk>" not in enc.tokens and len(enc.ids) >= 5  # '<', 'unk', '>' (or smaller pieces), never one token


@pytest.mark.parametrize("name", list(TOKENIZERS))
def test_text_without_specials_is_encoded_as_the_tokenizer_does(name):
    tok, _ = TOKENIZERS[name]
    for text in (*LECTURE_SENTENCES, "The zebra said <b>hi</b> & <3"):
        enc = encode(tok, text)
        assert enc.ids == tok.encode(text, add_special_tokens=False).ids and enc.literal == []


@pytest.mark.parametrize("name", ["word", "bpe"])
def test_mask_stays_special_where_the_lesson_asks_and_nothing_else_does(name):
    tok, _ = TOKENIZERS[name]
    enc = encode(tok, "the <MASK> sat <eos> on the <mask>", specials=(MASK,))
    assert enc.ids.count(tok.token_to_id(MASK)) == 2 and tok.token_to_id("<eos>") not in enc.ids
    assert enc.literal == [("<eos>", "<eos>")]
    assert tok.decode(enc.ids, skip_special_tokens=False).count("<mask>") == 2


def test_the_shared_tokenizer_is_never_switched(word):
    encode(word, "the <eos> cat")
    assert word.encode_special_tokens is False
    assert word.encode("<eos>", add_special_tokens=False).ids == [3]  # training data still reads its own specials


def test_the_encoder_reads_a_typed_mask_and_not_a_typed_eos(word):
    from viz_model.config import ModelConfig
    from viz_model.mlm import run_masked
    from viz_model.model import TinyTransformer

    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=word.get_vocab_size(), mask="bidirectional")).eval()
    run = run_masked(model, word, "the <mask> sat <eos> on the mat", trace=False)
    assert run.mask_positions == [2]
    assert run.ids.tolist().count(3) == 1 and run.ids[-1] == 3  # only the <eos> the encoder puts last


def test_generate_refuses_to_continue_past_an_end_token_in_the_prompt(word):
    from viz_model.config import ModelConfig
    from viz_model.generate import generate
    from viz_model.model import TinyTransformer

    model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=word.get_vocab_size())).eval()
    with pytest.raises(ValueError, match="end token .* at position 2"):
        next(generate(model, [2, 5, 3, 23], max_new_tokens=3))
    assert len(list(generate(model, [2, 5, 3, 23], max_new_tokens=3, stop_at_eos=False))) == 3


def test_a_model_folders_own_specials_are_text(model_folders):
    from viz_model import hf

    for name, typed in (("tiny-gpt2", "<|endoftext|>"), ("tiny-llama", "</s>")):
        tok = hf.read_tokenizer(model_folders[name])
        eos = tok.token_to_id(typed)
        enc = encode(tok, f"hello {typed} world")
        assert eos not in enc.ids and enc.literal == [(typed, typed)], name


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


def test_a_kept_special_on_a_byte_level_bpe_takes_the_space_before_it(english_model):
    """'send report <PAD> <PAD>' on the English model: the byte-level BPE read each space before a kept <pad> as a
    token of its own (a lone ' ' between the pads); the special now takes it, as an AddedToken(lstrip=True) does.
    A special read as plain text, the word tokenizer and a space after the special are unchanged."""
    tok = english_model.tokenizer
    kept = encode(tok, "send report <PAD> <PAD>", specials=(PAD,))
    assert kept.tokens == [" send", " report", "<pad>", "<pad>"]
    assert kept.ids[:2] == encode(tok, "send report").ids and kept.ids[2:] == [tok.token_to_id(PAD)] * 2
    assert encode(tok, "a <pad>  b", specials=(PAD,)).tokens == [" a", "<pad>", " ", " b"]
    assert encode(tok, "send report <PAD>").literal == [("<PAD>", PAD)]  # not kept: still plain text
    word = load_tokenizer("word")
    assert encode(word, "send report <PAD> <PAD>", specials=(PAD,)).tokens == ["send", "report", "<PAD>", "<PAD>"]
