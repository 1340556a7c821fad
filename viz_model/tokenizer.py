"""Tokenizers built with the `tokenizers` library: word-level (default, readable labels) and byte-level BPE.

Special tokens have fixed ids so that every shipped model agrees on them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from viz_model import ASSETS_DIR

PAD, UNK, BOS, EOS, MASK = "<pad>", "<unk>", "<bos>", "<eos>", "<mask>"
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, MASK]  # ids 0..4 in every tokenizer
TOKENIZER_NAMES = ("word", "bpe")
MAX_TEXT_CHARS = 20_000  # anything longer is cut before tokenizing (a paste must not stall the server)


def _specials() -> list[AddedToken]:
    # normalized=True: "<PAD>" typed in capitals is lower-cased first and still found as <pad>.
    return [AddedToken(t, special=True, normalized=True) for t in SPECIAL_TOKENS]


def build_word_tokenizer(texts: Iterable[str], min_frequency: int = 1) -> Tokenizer:
    """One lower-cased word = one token, punctuation separate; unknown words become <unk>."""
    tok = Tokenizer(models.WordLevel(unk_token=UNK))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(r"\w+|[^\w\s]"), behavior="isolated")]
    )
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    trainer = trainers.WordLevelTrainer(special_tokens=_specials(), min_frequency=min_frequency)
    tok.train_from_iterator(texts, trainer)
    return tok


def extend_word_vocab(tok: Tokenizer, words: Iterable[str]) -> Tokenizer:
    """The same word-level tokenizer with `words` appended at the end of its vocabulary: every existing id is
    unchanged, so models trained on the smaller vocabulary read the same ids (the toy language's words)."""
    vocab = tok.get_vocab()
    new = [w for w in dict.fromkeys(words) if w not in vocab]
    out = Tokenizer.from_str(tok.to_str())
    out.model = models.WordLevel({**vocab, **{w: len(vocab) + i for i, w in enumerate(new)}}, unk_token=UNK)
    return out


def build_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 512) -> Tokenizer:
    """Byte-level BPE (GPT-2 style): any text is representable; words split into sub-word pieces."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=_specials(),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return tok


def tokenizer_path(name: str):
    return ASSETS_DIR / "tokenizers" / f"{name}.json"


def load_tokenizer(name: str = "word") -> Tokenizer:
    """A shipped tokenizer by name ('word' or 'bpe'), read from assets/tokenizers/NAME.json."""
    if name not in TOKENIZER_NAMES:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {TOKENIZER_NAMES}.")
    path = tokenizer_path(name)
    if not path.exists():
        raise ValueError(f"the {name} tokenizer is missing from {path}; reinstall the assets.")
    return Tokenizer.from_file(str(path))


def special_ids(tok: Tokenizer) -> dict[str, int]:
    return {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}


@dataclass
class Encoded:
    ids: list[int]
    tokens: list[str]     # what the student typed for each token (unknown words keep their text)
    pieces: list[str]     # the tokenizer's own vocabulary entries ('<unk>' for unknown words)
    truncated: bool       # True when the text had more tokens than max_len (or chars than MAX_TEXT_CHARS)
    n_tokens_total: int   # tokens before truncation

    @property
    def unknown(self) -> list[str]:
        return [t for t, p in zip(self.tokens, self.pieces) if p == UNK]


def clean_text(text: str) -> str:
    """Drop control and zero-width format characters (they render as nothing and confuse students)."""
    return "".join(ch for ch in text if ch in "\t\n" or unicodedata.category(ch) not in ("Cc", "Cf"))


def encode(tok: Tokenizer, text: str, max_len: int | None = None, bos: bool = False) -> Encoded:
    """Tokenize user text for display and the model; truncates to max_len tokens and says so."""
    text = text or ""
    cut_chars = len(text) > MAX_TEXT_CHARS
    text = clean_text(text[:MAX_TEXT_CHARS])
    enc = tok.encode(text, add_special_tokens=False)
    ids = list(enc.ids)
    pieces = [display_token(tok, i) for i in ids]
    byte_level = isinstance(tok.decoder, decoders.ByteLevel)
    # Word-level: label each token with the text it came from, so '<b>' or 'Zebra' show as typed.
    tokens = pieces if byte_level else [text[a:b] or p for (a, b), p in zip(enc.offsets, pieces)]
    if bos:
        ids, tokens, pieces = [tok.token_to_id(BOS), *ids], [BOS, *tokens], [BOS, *pieces]
    total = len(ids)
    truncated = cut_chars or (max_len is not None and total > max_len)
    if max_len is not None:
        ids, tokens, pieces = ids[:max_len], tokens[:max_len], pieces[:max_len]
    return Encoded(ids, tokens, pieces, truncated, total)


def display_token(tok: Tokenizer, token_id: int) -> str:
    """Readable text for one token: byte-level 'Ġthe' -> ' the'; specials stay literal ('<pad>')."""
    piece = tok.id_to_token(token_id)
    if piece is None:
        return f"<id {token_id}>"
    if piece in SPECIAL_TOKENS or not isinstance(tok.decoder, decoders.ByteLevel):
        return piece
    return tok.decoder.decode([piece]) or piece
