"""The encoders and how each reads a sentence: the English encoder (byte-level BPE, never <unk>), the toy one (the
classroom corpus's words), and the causal decoder each is compared with."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from viz_model import checkpoint, data
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import MASK

SINGULAR_VERBS = frozenset(v[0] for v in data.AGREE_VERBS)  # is, was, seems, looks
PLURAL_VERBS = frozenset(v[1] for v in data.AGREE_VERBS)    # are, were, seem, look
TWIN = {a: b for pair in data.AGREE_VERBS for a, b in (pair, pair[::-1])}  # is <-> are, was <-> were, ...
ENGLISH = "english-encoder"  # the page's default: the English model's byte-level BPE, trained on WordNet's text
SHIPPED = "encoder-mlm"      # the toy encoder: the classroom corpus's words (its agreement and pronoun lessons)
DECODER = "classroom"        # the shipped causal decoder a toy encoder is compared with
DECODERS = {ENGLISH: "english"}  # ... and the English encoder's: the English model, the same tokenizer
MAX_TOP_K = 10             # fill-ins computed per mask; the page's top-k slider shows the first k


def decoder_for(key: str) -> str:
    """The shipped causal decoder that reads a sentence as this encoder does (the same tokenizer)."""
    return DECODERS.get(key, DECODER)


def is_byte_level(tokenizer) -> bool:
    """A byte-level BPE (any text is some tokens) rather than a word-level vocabulary (unknown words are <unk>)."""
    return type(tokenizer.decoder).__name__ == "ByteLevel"


def encoder_name(key: str, title: str, tokenizer) -> str:
    """The picker's name of an encoder, by what it can read."""
    if is_byte_level(tokenizer):
        size = f"{tokenizer.get_vocab_size():,} BPE tokens"
        return f"English encoder ({size}): English sentences, never <unk>" if key == ENGLISH else f"{title} ({size})"
    n = f"{tokenizer.get_vocab_size():,}-word vocabulary"  # as the classroom model's title counts its words
    return f"Toy encoder ({n}): agreement and pronoun lessons" if key == SHIPPED else f"{title} ({n})"


# lru_cache, not ui.cache.cached (ui-only): a pure function of immutable arguments, the file's mtime among them, so
# a checkpoint saved again under the same path is read again
@functools.lru_cache(maxsize=256)
def bidirectional(path: str, mtime: float) -> bool:
    """A TinyTransformer checkpoint trained without the causal mask (its JSON config says causal: false)."""
    try:
        doc = checkpoint.read_metadata(path)
    except (OSError, ValueError):
        return False
    return doc.get("kind", "transformer") == "transformer" and (doc.get("config") or {}).get("causal") is False


@dataclass(frozen=True)
class MaskedWord:
    """A held-out sentence (words) with one word to hide at `index` (a word index, no <bos>)."""

    words: tuple[str, ...]
    index: int

    @property
    def answer(self) -> str:
        return self.words[self.index]


@torch.no_grad()
def masked_probs(model: TinyTransformer, tokenizer, items: list[tuple[list[str], list[int]]]) -> list[torch.Tensor]:
    """For each (words, positions): the encoder's softmax (n_positions, V) with those words replaced by <mask>.

    Sequences are <bos> words <eos>, right-padded in one batch; padding keys are masked out.
    """
    bos, eos, pad, unk, mask_id = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<pad>", "<unk>", MASK))
    seqs = []
    for words, positions in items:
        ids = [_id(tokenizer, w, unk) for w in words]
        for p in positions:
            ids[p] = mask_id
        seqs.append([bos, *ids, eos])
    ids = data.pad_right(seqs, pad).to(model.device)  # (N, T)
    with eval_mode(model):
        logits = model(ids, key_padding_mask=ids != pad).logits.float()  # (N, T, V)
    probs = torch.softmax(logits, dim=-1).cpu()
    return [probs[i, [p + 1 for p in positions]] for i, (_, positions) in enumerate(items)]  # +1 for <bos>


def sentence_ids(tokenizer, words: list[str]) -> list[int]:
    """<bos> words <eos>, as the encoder reads a sentence (a word it does not know is <unk>)."""
    bos, eos, unk = (tokenizer.token_to_id(t) for t in ("<bos>", "<eos>", "<unk>"))
    return [bos, *(_id(tokenizer, w, unk) for w in words), eos]


def _id(tokenizer, word: str, unk: int) -> int:
    i = tokenizer.token_to_id(word)
    return unk if i is None else i


# -- what the page says ------------------------------------------------------------------------------------------------
def missing_encoder_text(missing: str, have_other: bool) -> str:
    """A shipped encoder is not installed: say so, how to build it, and whether another encoder stands in."""
    return (f"The shipped encoder **{missing}** is not installed (assets/models/{missing}.safetensors is missing), so "
            f"the page cannot show it. Build it with `.venv/bin/python scripts/build_assets.py {missing}`."
            + (" Meanwhile the page runs another encoder." if have_other else ""))


PICKER_HELP = ("The English encoder reads English as the English model's byte-level BPE tokens (lower-cased), so no "
               "word is `<unk>` (a long sentence is cut to its context length). The toy encoder knows only the "
               "classroom corpus's words: the agreement and pronoun measurements on the Held-out metrics tab are built "
               "on them.")
