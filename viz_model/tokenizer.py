"""Tokenizers built with the `tokenizers` library: word-level (default, readable labels) and byte-level BPE.

Special tokens have fixed ids so that every shipped model agrees on them.

Typed text is literal: `encode` reads "<eos>" or "<PAD>" typed by a student as plain text (split as any unknown
word would be), never as the special token, with the `tokenizers` library's own switch
(`Tokenizer.encode_special_tokens`). Only the specials a lesson asks the student to type (the Encoder's <mask>,
the Masks page's <pad>) are named in `specials=` and stay special. `Encoded.literal` lists what was read as text,
so a page can say so.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from viz_model import ASSETS_DIR

PAD, UNK, BOS, EOS, MASK = "<pad>", "<unk>", "<bos>", "<eos>", "<mask>"
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, MASK]  # ids 0..4 in every tokenizer
TOKENIZER_NAMES = ("word", "bpe")
MAX_TEXT_CHARS = 20_000  # anything longer is cut before tokenizing (a paste must not stall the server)
_BYTE_ALPHABET = frozenset(pre_tokenizers.ByteLevel.alphabet())  # a byte-level BPE's 256 symbols, one per byte
_BYTE_FALLBACK = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # a SentencePiece byte-fallback piece: one byte


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


def build_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 512, prefix_space: bool = False) -> Tokenizer:
    """Byte-level BPE (GPT-2 style): any text is representable; words split into sub-word pieces. With
    `prefix_space` a text's first word gets the space a word inside a sentence has (one token for " the")."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
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
    literal: list[tuple[str, str]] = field(default_factory=list)  # (as typed, special token) read as plain text
    lowercased: list[tuple[str, str]] = field(default_factory=list)  # (as typed, as read) where the tokenizer
    # lower-cases: the typed words its normalizer changed ("My" -> "my")

    @property
    def unknown(self) -> list[str]:
        return [t for t, p in zip(self.tokens, self.pieces) if p == UNK]


def clean_text(text: str) -> str:
    """Drop control and zero-width format characters (they render as nothing and confuse students)."""
    return "".join(ch for ch in text if ch in "\t\n" or unicodedata.category(ch) not in ("Cc", "Cf"))


def encode(tok: Tokenizer, text: str, max_len: int | None = None, bos: bool = False,
           specials: Iterable[str] = ()) -> Encoded:
    """Tokenize user text for display and the model; truncates to max_len tokens and says so. A special token's
    spelling in the text ("<eos>", "<PAD>") is plain text, except those named in `specials` (e.g. (MASK,))."""
    text = text or ""
    cut_chars = len(text) > MAX_TEXT_CHARS
    text = clean_text(text[:MAX_TEXT_CHARS])
    ids, offsets, literal = _literal_ids(tok, text, frozenset(specials))
    pieces = token_labels(tok, ids)  # before any cut: a character cut at max_len still knows its bytes
    byte_level = isinstance(tok.decoder, decoders.ByteLevel)
    # Word-level: label each token with the text it came from, so '<b>' or 'Zebra' show as typed.
    tokens = pieces if byte_level else [text[a:b] or p for (a, b), p in zip(offsets, pieces)]
    if bos:
        ids, tokens, pieces = [tok.token_to_id(BOS), *ids], [BOS, *tokens], [BOS, *pieces]
    total = len(ids)
    truncated = cut_chars or (max_len is not None and total > max_len)
    if max_len is not None:
        ids, tokens, pieces = ids[:max_len], tokens[:max_len], pieces[:max_len]
    return Encoded(ids, tokens, pieces, truncated, total, literal, case_changes(tok, text))


def typed_specials(tok: Tokenizer, text: str, specials: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(as typed, special token) for each special token spelled in `text` that `encode` reads as plain text."""
    return _literal_ids(tok, clean_text((text or "")[:MAX_TEXT_CHARS]), frozenset(specials))[2]


def _fold(s: str) -> str:
    return unicodedata.normalize("NFKC", s).casefold()


def _literal_ids(tok: Tokenizer, text: str, keep: frozenset[str]
                 ) -> tuple[list[int], list[tuple[int, int]], list[tuple[str, str]]]:
    """(ids, char offsets, typed specials read as text). The usual encoding first: where it matched no special
    token (nearly always) it is the answer; else the text is re-encoded by a copy of the tokenizer with
    `encode_special_tokens` on, piece by piece between the specials in `keep`."""
    enc = tok.encode(text, add_special_tokens=False)
    special, unk = _special_tokens(tok)
    # An unknown word also gets the <unk> id: only a typed "<unk>" itself is a special match.
    found = [(k, special[i]) for k, (i, (a, b)) in enumerate(zip(enc.ids, enc.offsets))
             if i in special and (i != unk or _fold(text[a:b]) == _fold(special[i]))]
    keep_folded = {_fold(t) for t in keep}
    literal = [(text[slice(*enc.offsets[k])], name) for k, name in found if _fold(name) not in keep_folded]
    # A byte-level BPE reads the space before a kept special as a token of its own ('send report <pad> <pad>': a lone
    # ' ' between the pads, a real word to the masks); the special takes it, as a Hugging Face AddedToken(lstrip=True).
    absorb = isinstance(tok.decoder, decoders.ByteLevel) and len(literal) < len(found)
    if not literal and not absorb:
        return list(enc.ids), list(enc.offsets), []
    split = _split_specials(tok)
    ids, offsets, start = [], [], 0
    for k in [*(k for k, name in found if _fold(name) in keep_folded), None]:
        end = enc.offsets[k][0] if k is not None else len(text)
        part = split.encode(text[start:end].rstrip() if absorb and k is not None else text[start:end],
                            add_special_tokens=False)
        ids += part.ids
        offsets += [(a + start, b + start) for a, b in part.offsets]
        if k is not None:
            ids.append(enc.ids[k])
            offsets.append(enc.offsets[k])
            start = enc.offsets[k][1]
    return ids, offsets, list(dict.fromkeys(literal))


# lru_cache on a tokenizer: the app's tokenizers are loaded once and never changed after (hf.py adds a folder's
# special tokens before it is shared), so what is derived from one is a pure function of it; keyed by identity, each
# entry keeps its tokenizer alive. 16: the shipped two and a few model folders per process.
@functools.lru_cache(maxsize=16)
def _special_tokens(tok: Tokenizer) -> tuple[dict[int, str], int | None]:
    """({id: text} of the tokenizer's special tokens, the id unknown words get or None). Shared: read-only."""
    special = {i: t.content for i, t in tok.get_added_tokens_decoder().items() if t.special}
    unk = getattr(tok.model, "unk_token", None)
    return special, (tok.token_to_id(unk) if unk else None)


@functools.lru_cache(maxsize=16)  # as _special_tokens: a pure function of a tokenizer that never changes
def _split_specials(tok: Tokenizer) -> Tokenizer:
    """A copy of `tok` that reads special tokens' spellings as text (the shared tokenizer is never switched: other
    sessions encode with it at the same time)."""
    copy = Tokenizer.from_str(tok.to_str())
    copy.encode_special_tokens = True
    return copy


def lowercases(tok: Tokenizer) -> bool:
    """Whether the tokenizer's normalizer lower-cases every text before it is split (a fact of the tokenizer, read by
    running its own normalizer: the English and word-level models' NFKC + Lowercase do, GPT-2 has none)."""
    return tok.normalizer is not None and tok.normalizer.normalize_str("My ABC") == "my abc"


def case_changes(tok: Tokenizer, text: str) -> list[tuple[str, str]]:
    """(as typed, as the tokenizer reads it) for each distinct typed word its normalizer lower-cases; [] when it
    keeps case."""
    if not lowercases(tok):
        return []
    words = dict.fromkeys(w for w in re.findall(r"\w+", text) if w != w.lower())
    return [(w, tok.normalizer.normalize_str(w)) for w in words]


def display_token(tok: Tokenizer, token_id: int) -> str:
    """Readable text for one token: byte-level 'Ġthe' -> ' the'; specials stay literal ('<pad>')."""
    piece = tok.id_to_token(token_id)
    if piece is None:
        return f"<id {token_id}>"
    if piece in SPECIAL_TOKENS or not isinstance(tok.decoder, decoders.ByteLevel):
        return piece
    return tok.decoder.decode([piece]) or piece


def _piece_bytes(tok: Tokenizer, piece: str | None) -> int | None:
    """How many bytes of text a vocabulary entry holds where the tokenizer's pieces are bytes: a byte-level BPE writes
    one symbol of its 256-symbol alphabet per byte (so 'ðŁį' is 3 bytes), a SentencePiece byte fallback one '<0xF0>'
    per byte. None for any other piece (a word, a special token, a piece of whole characters)."""
    if piece is None:
        return None
    if _BYTE_FALLBACK.fullmatch(piece):
        return 1
    if isinstance(tok.decoder, decoders.ByteLevel) and set(piece) <= _BYTE_ALPHABET:
        return len(piece)
    return None


def _decode(tok: Tokenizer, pieces: list[str]) -> str:
    return tok.decoder.decode(pieces) if tok.decoder is not None else "".join(pieces)


def _part_of_a_character(tok: Tokenizer, piece: str | None) -> bool:
    """A byte piece that alone decodes to '�': some of the bytes of a character that other tokens complete."""
    return (piece is not None and (not piece.isascii() or bool(_BYTE_FALLBACK.fullmatch(piece)))
            and "\ufffd" in _decode(tok, [piece]) and _piece_bytes(tok, piece) is not None)


def token_labels(tok: Tokenizer, ids: Iterable[int], one=None, finish=None) -> list[str]:
    """Display text of each token of one text, in order: `one(tok, id)` per token (display_token by default), except
    byte pieces. A byte-level BPE splits a character it has no token for into its UTF-8 bytes ('🍕' is 4 tokens,
    'م' 2), and each piece alone decodes to '�'; here each is labelled with the character its bytes make and which
    bytes it holds, '🍕 (bytes 1–3 of 4)', found by decoding the run of pieces together with the tokenizer's own
    decoder. `finish` is applied to whole characters (a model folder marks spaces '␣'). Only for a text's tokens in
    order: a list of unrelated candidates (top-k) is labelled one token at a time."""
    ids = [int(i) for i in ids]
    one = one or display_token
    labels = [one(tok, i) for i in ids]
    pieces = [tok.id_to_token(i) for i in ids]
    broken = [_part_of_a_character(tok, p) for p in pieces]
    k = 0
    while k < len(ids):
        if not broken[k]:
            k += 1
            continue
        end = next((j for j in range(k, len(ids)) if not broken[j]), len(ids))
        labels[k:end] = _byte_run_labels(tok, pieces[k:end], finish or (lambda s: s))
        k = end
    return labels


def _byte_run_labels(tok: Tokenizer, pieces: list[str], finish) -> list[str]:
    """Labels for consecutive byte pieces: the characters their bytes make, decoded together; the longest prefix
    that decodes to whole characters is labelled so, bytes after it ('(byte 1 of a cut character)': generation
    stopped inside a character, or bytes that make none) by their place in what is left."""
    sizes = [_piece_bytes(tok, p) for p in pieces]
    whole = next(j for j in range(len(pieces), -1, -1) if "\ufffd" not in _decode(tok, pieces[:j]))
    text = _decode(tok, pieces[:whole])
    if sum(len(c.encode()) for c in text) != sum(sizes[:whole]):  # a decoder that added or dropped text
        whole, text = 0, ""
    spans, at = [], 0  # (character, first byte, end byte) in the run
    for c in text:
        spans.append((c, at, at + len(c.encode())))
        at += len(c.encode())
    labels, start, c0 = [], 0, 0
    for size in sizes[:whole]:
        parts, end = [], start + size
        while c0 < len(spans) and spans[c0][1] < end:
            c, a, b = spans[c0]
            whole_char = a >= start and b <= end
            parts.append(finish(c) if whole_char else _bytes_of(c, max(a, start) - a + 1, min(b, end) - a, b - a))
            if b > end:
                break
            c0 += 1
        labels.append(_join(parts))
        start = end
    rest, at = sizes[whole:], 0
    for size in rest:
        labels.append(_bytes_of("\ufffd", at + 1, at + size, None))
        at += size
    return labels


def _bytes_of(char: str, first: int, last: int, of: int | None) -> str:
    which = f"byte {first}" if first == last else f"bytes {first}–{last}"
    return f"{char} ({which} of {of})" if of is not None else f"{char} ({which} of a cut character)"


def _join(parts: list[str]) -> str:
    """Whole characters side by side, each part of a character on its own: 'م (byte 2 of 2) + ر (byte 1 of 2)'."""
    out: list[str] = []
    for p in parts:
        if out and " (byte" not in p and " (byte" not in out[-1]:
            out[-1] += p
        else:
            out.append(p)
    return " + ".join(out)
