"""How each model reads text: its own special tokens, start token, token labels and the words it cannot read.

The app's models use "<bos>", "<eos>", "<pad>"; a model folder (GPT-2, Llama...) uses what its tokenizer config names
("<|endoftext|>", "<s>", "</s>"...), from metadata["special_tokens"], and its start token only where its own tokenizer
puts one in front (metadata["adds_bos"]). Nothing here hard-codes those. (Moved from ui.widgets, #27: no Streamlit.)
"""

from __future__ import annotations

import re

from tokenizers import Tokenizer, decoders, pre_tokenizers

from viz_model.checkpoint import Checkpoint
from viz_model.tokenizer import BOS, EOS, PAD, Encoded, display_token, encode, load_tokenizer, token_labels

_BYTE_ALPHABET = frozenset(pre_tokenizers.ByteLevel.alphabet())
_BYTE_DECODER = decoders.ByteLevel()
_MARKS = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})


def is_folder_model(ckpt: Checkpoint) -> bool:
    """A model read from a Hugging Face folder (GPT-2, Llama...), not one of the app's own checkpoints."""
    return (ckpt.metadata or {}).get("source") == "huggingface"


def uses_bos(ckpt: Checkpoint) -> bool:
    """Whether a sentence starts with the model's start token. Shipped models were trained on '<bos> text'
    (metadata "bos"); a model folder's tokenizer puts its own <bos> first or not (metadata "adds_bos": Llama
    yes, GPT-2 and Qwen2 no). Feed each the same as it was trained on."""
    if is_folder_model(ckpt):
        return bool(ckpt.metadata.get("adds_bos")) and start_token(ckpt) is not None
    return bool((ckpt.metadata or {}).get("bos")) and ckpt.tokenizer.token_to_id(BOS) is not None


def special_token(ckpt: Checkpoint, role: str) -> tuple[int, str] | None:
    """(id, text) of the model's own "bos" / "eos" / "pad" / "unk" token, or None when it has none. A folder's pad
    may be an embedding row no token uses: its text is then "<row N>"."""
    if is_folder_model(ckpt):
        entry = ((ckpt.metadata or {}).get("special_tokens") or {}).get(role)
        if not entry or entry.get("id") is None:
            return None
        return int(entry["id"]), entry.get("token") or f"<row {entry['id']}>"
    name = {"bos": BOS, "eos": EOS, "pad": PAD, "unk": "<unk>"}[role]
    tid = ckpt.tokenizer.token_to_id(name)
    return None if tid is None else (int(tid), name)


def start_token(ckpt: Checkpoint) -> tuple[int, str] | None:
    """The token a sentence may start with: "<bos>", or a folder model's own ("<|endoftext|>" for GPT-2, "<s>")."""
    return special_token(ckpt, "bos")


def end_token(ckpt: Checkpoint) -> tuple[int, str] | None:
    """The token that ends a text: "<eos>", or a folder model's own ("<|endoftext|>", "</s>", "<|im_end|>")."""
    return special_token(ckpt, "eos")


def pad_token(ckpt: Checkpoint) -> tuple[int, str]:
    """The padding token (a folder model always has one: its own, an unused embedding row, or its end token)."""
    found = special_token(ckpt, "pad")
    return found if found is not None else (int(ckpt.model.config.pad_id), f"<id {ckpt.model.config.pad_id}>")


def encode_for(ckpt: Checkpoint, text: str, max_len: int | None = None, bos: bool = False,
               specials: tuple[str, ...] = ()) -> Encoded:
    """tokenizer.encode for this model: with bos, its own start token in front (start_token); a folder model's
    tokens are labelled by piece_text ('␣the'), its pieces are the raw vocabulary entries ('Ġthe'). Typed text is
    literal: a special token's spelling ("<eos>", "<PAD>", "<|endoftext|>") is plain text, except the `specials` a
    lesson asks for (the Encoder's <mask>, the Masks page's <pad>)."""
    tok = ckpt.tokenizer
    if not is_folder_model(ckpt):
        enc = encode(tok, text, max_len=max_len, bos=bos, specials=specials)
    else:
        raw = encode(tok, text, specials=specials)  # no special tokens added, not cut yet
        ids, tokens = list(raw.ids), sequence_texts(ckpt, raw.ids)
        pieces = [tok.id_to_token(i) or f"<id {i}>" for i in ids]
        start = start_token(ckpt) if bos else None
        if start is not None:
            ids, tokens, pieces = [start[0], *ids], [start[1], *tokens], [start[1], *pieces]
        total = len(ids)
        truncated = raw.truncated or (max_len is not None and total > max_len)
        if max_len is not None:
            ids, tokens, pieces = ids[:max_len], tokens[:max_len], pieces[:max_len]
        enc = Encoded(ids, tokens, pieces, truncated, total, raw.literal, raw.lowercased)
    return enc


def token_texts(ckpt: Checkpoint, ids) -> list[str]:
    """Display text of each token id on its own (display_token for the app's models, piece_text for a model
    folder's): for lists of unrelated tokens, such as a step's top-k candidates. A text's tokens: sequence_texts."""
    tok = ckpt.tokenizer
    if not is_folder_model(ckpt):
        return [display_token(tok, int(i)) for i in ids]
    added = set(tok.get_added_tokens_decoder())
    return [piece_text(tok, int(i), added) for i in ids]


def sequence_texts(ckpt: Checkpoint, ids) -> list[str]:
    """Display text of the tokens of one text, in order: as token_texts, except that the byte pieces of a character
    the tokenizer split ('🍕' into 4 bytes) are each labelled with that character, '🍕 (bytes 1–2 of 4)'."""
    tok = ckpt.tokenizer
    if not is_folder_model(ckpt):
        return token_labels(tok, ids)
    added = set(tok.get_added_tokens_decoder())
    return token_labels(tok, ids, one=lambda t, i: piece_text(t, i, added), finish=lambda s: s.translate(_MARKS))


def piece_text(tok: Tokenizer, token_id: int, added: set[int] | None = None) -> str:
    """A real tokenizer's token as a label: its text with a space shown as ␣ and a newline as ↵ (GPT-2's 'Ġthe' and
    Llama's '▁the' both read '␣the'); special and added tokens literal; part of a multi-byte character alone stays the
    raw byte-level piece (in a text, sequence_texts labels it with its character)."""
    piece = tok.id_to_token(token_id)
    if piece is None:
        return f"<id {token_id}>"
    if token_id in (set(tok.get_added_tokens_decoder()) if added is None else added):
        return piece
    if set(piece) <= _BYTE_ALPHABET:
        text = _BYTE_DECODER.decode([piece])
        if "\ufffd" in text:
            return piece
    else:
        text = piece.replace("▁", " ")
    return text.translate(_MARKS) or piece


def tokenizer_columns(text: str, model_tok, other: str = "bpe") -> dict[str, list[str]] | None:
    """The same text under the model's own tokenizer and a shipped one (`other`: "bpe" or "word"), as table columns."""
    try:
        theirs = load_tokenizer(other)
    except ValueError:
        return None
    own = "word" if other == "bpe" else "bpe"
    a, b = encode(model_tok, text, max_len=64), encode(theirs, text, max_len=64)
    n = max(len(a.ids), len(b.ids))
    pad = lambda xs: [*xs, *[""] * (n - len(xs))]  # noqa: E731
    return {f"{own} (the model's)": pad(a.pieces), f"{own} id": pad([str(i) for i in a.ids]),
                         f"{other} piece": pad(b.pieces), f"{other} id": pad([str(i) for i in b.ids])}


def token_id(ckpt: Checkpoint, word: str) -> int | None:
    enc = encode_for(ckpt, word)
    return enc.ids[0] if enc.ids and not enc.unknown else None


NOTICE_WORDS, NOTICE_WORD_CHARS = 12, 24  # a notice names at most 12 words, each cut to 24 characters


def short_word(word: str, limit: int = NOTICE_WORD_CHARS) -> str:
    """A word as a notice names it: a 5,000-character 'word' filled the screen (#26), so a long one is cut to
    `limit` characters and says how long it was."""
    return word if len(word) <= limit else f"{word[:limit - 1]}… ({len(word):,} characters)"


def _named(word: str) -> str:
    """A word in a notice: its (cut) text as a token, the length it had outside the code span."""
    if len(word) <= NOTICE_WORD_CHARS:
        return md_token(word)
    return f"{md_token(word[:NOTICE_WORD_CHARS - 1] + '…')} ({len(word):,} characters)"  # as short_word cuts it


def unknown_words_text(words: list[str]) -> str:
    """The words a word-level model read as <unk>: each once, in order, at most NOTICE_WORDS, each shortened."""
    distinct = list(dict.fromkeys(words))
    named = ", ".join(_named(w) for w in distinct[:NOTICE_WORDS])
    more = len(distinct) - NOTICE_WORDS
    return named + (f" and {more:,} more" if more > 0 else "")


def case_note(enc: Encoded, most: int = 3) -> str | None:
    """What the tokenizer's lower-casing did to this text, for the token table ("My" is read as "my"); None where it
    changed nothing (a tokenizer that keeps case, or a text with no capitals)."""
    if not enc.lowercased:
        return None
    said = [f"{md_token(a)} is read as {md_token(b)}" for a, b in enc.lowercased[:most]]
    more = len(enc.lowercased) - most
    return ("This model's tokenizer lower-cases every text before it splits it (a step of its normalizer): "
            + ", ".join(said) + (f" and {more:,} more" if more > 0 else "") + ".")


# -- tokens and typed text inside Markdown --------------------------------------------------------------------------
_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character: CommonMark lets each be escaped


def md_token(token: str) -> str:
    """A token (or a word, a special token's name: one unit a student reads as typed) for any Markdown Streamlit draws
    (st.markdown, captions, boxes, widget labels): a code span, so '*', '_x_', '<b>x</b>', '$x$' or ':red[x]' show as
    typed; a space shown as ␣, a newline as ↵ (a leading space inside **…** broke the bold: '** sun**'); the empty
    token as ∅. The fence is one backtick longer than any run of backticks in the token, padded where the token starts
    or ends with one (CommonMark's code-span rule), so '`' shows too. Streamlit's frontend rewrites every
    ':material/' in the raw text, code spans included (an icon); a word joiner (U+2060, invisible) after the colon
    keeps the token as typed."""
    text = str(token).translate(_MARKS).replace(":material/", ":\u2060material/") or "∅"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text(text: str) -> str:
    """Typed text inside prose (a sentence, a question, a chart's summary): every ASCII punctuation character
    backslash-escaped, so Markdown, HTML, LaTeX ('$x$') and Streamlit's directives (':red[x]') show as typed."""
    return _MD_PUNCTUATION.sub(r"\\\1", str(text))


_ROLE_NAMES = {"bos": "the start token", "eos": "the end-of-sequence token", "pad": "the padding token",
               "unk": "the unknown-word token", "mask": "the mask token"}


def specials_text(ckpt: Checkpoint | None, literal: list[tuple[str, str]], kept: tuple[str, ...] = ()) -> str | None:
    """The sentence saying that special tokens typed in the text were read as plain text: `literal` is
    Encoded.literal (or tokenizer.typed_specials), `kept` the specials this box reads as special; ckpt None: one of the
    app's models. None when nothing special was typed."""
    if not literal:
        return None
    folder = ckpt is not None and is_folder_model(ckpt)
    meta = (ckpt.metadata or {}).get("special_tokens") or {} if folder else {}
    roles = {**{e["token"]: r for r, e in meta.items() if e and e.get("token")},
             **({} if meta else {"<pad>": "pad", "<unk>": "unk", "<bos>": "bos", "<eos>": "eos", "<mask>": "mask"})}
    said = [f"{md_token(typed)} typed in the text is read as plain text, not as "
            f"{_ROLE_NAMES.get(roles.get(name), f'the special token {md_token(name)}')}."
            for typed, name in dict(literal[:6]).items()]
    also = (" Here only " + ", ".join(md_token(t) for t in kept) + " typed is read as the token itself."
            if kept else "")
    return " ".join(said) + " Special tokens are put in by the app where the model needs them." + also


def reading_note(ckpt: Checkpoint) -> str | None:
    """How a sentence box's text reaches the model: the start token put in front, or a folder's own tokenizer."""
    folder = is_folder_model(ckpt)
    if uses_bos(ckpt):
        return (f"The model's own start token {md_token(start_token(ckpt)[1])} is put in front, as its tokenizer "
                "does; ␣ marks a space that belongs to the token." if folder else
                "A `<bos>` token is put in front, as in training: many heads park their spare attention on it.")
    return ("Tokens from the model's own tokenizer (␣ marks a space that belongs to the token); its tokenizer puts no "
            "start token in front." if folder else None)
