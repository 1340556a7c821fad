"""Fill in the blanks: words hidden behind <mask>, the encoder reads the sentence once in both directions and
ranks a fill-in for each blank; its heads read the tokens after a blank too."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from viz_model import english
from viz_model.english import load_heldout
from viz_model.lessons.common import Fact, row_sum_error
from viz_model.lessons.encoder.models import MAX_TOP_K, TWIN, is_byte_level
from viz_model.lessons.encoder.toy_metrics import agreement_items, pronoun_items
from viz_model.mlm import mask_words, run_masked, run_masked_ids
from viz_model.model import TinyTransformer
from viz_model.tokenizer import MASK, UNK, display_token


def default_masks(words: list[str]) -> list[int]:
    """Hide an agreement verb if the sentence has one (is/are, was/were, ...), else the first noun after 'the'
    or 'a' (the cat, the bank), else the second word: a blank with words on both sides."""
    low = [w.strip().lower() for w in words]  # a byte-level BPE's tokens carry their space: ' the'
    verbs = [i for i, w in enumerate(low) if w in TWIN]
    nouns = [i + 1 for i, w in enumerate(low[:-1]) if w in ("the", "a") and low[i + 1].isalpha()]
    return (verbs or nouns or [min(1, len(words) - 1)])[:1]


@dataclass(frozen=True)
class Blanks:
    """The sentence the encoder reads: its ids with <mask> at each blank, the text shown, and per blank the hidden
    token's label and id (None for a <mask> typed in the text)."""

    text: str
    ids: tuple[int, ...]        # no <bos> / <eos>
    labels: tuple[str, ...]     # one per id, "<mask>" at each blank
    answers: tuple[str | None, ...]
    answer_ids: tuple[int | None, ...]


def blanks(tokenizer, ids: list[int], words: list[str], pieces: list[str], picked: list[int]) -> Blanks:
    """Hide the tokens at `picked` (indices into ids, words and pieces: no <bos>). A word-level sentence is written
    with its words; a byte-level BPE's with the tokens' own text, so a hidden piece of a word shows as <mask> inside
    it ("grand<mask>other"). The ids are what the encoder reads: not the text encoded again, which would split the
    rest of such a word differently."""
    mask_id, chosen = tokenizer.token_to_id(MASK), set(picked)
    masked = [mask_id if i in chosen else t for i, t in enumerate(ids)]
    if is_byte_level(tokenizer):
        text = "".join((" " if pieces[i].startswith(" ") or pieces[i] == MASK else "") + MASK if m == mask_id
                       else display_token(tokenizer, m) for i, m in enumerate(masked)).strip()
    else:
        text = mask_words(words, picked)
    at = [i for i, m in enumerate(masked) if m == mask_id]
    labels = tuple(MASK if m == mask_id else w for m, w in zip(masked, words))
    return Blanks(text, tuple(masked), labels, tuple(pieces[i] if i in chosen else None for i in at),
                  tuple(ids[i] if i in chosen else None for i in at))


def reads_caption(tokenizer) -> str:
    """How this encoder reads the sentence (the page's caption under the box)."""
    if is_byte_level(tokenizer):
        return ("The encoder reads `<bos>` + your sentence's tokens + `<eos>`, in one pass, in both directions. Its "
                f"tokens are the English model's byte-level BPE ({tokenizer.get_vocab_size():,} tokens, lower-cased): "
                "a long or rare word is several pieces, and each piece can be hidden on its own.")
    return ("The encoder reads `<bos>` + your words + `<eos>`, in one pass, in both directions. Its vocabulary has "
            f"{tokenizer.get_vocab_size():,} words: any other word is `<unk>`.")


def example_sentences(tokenizer) -> tuple[str, dict[str, str]]:
    """(caption, {button name: sentence with <mask>}) for the Fill-in tab: for the English encoder a held-out WordNet
    text (never trained on) and a student's own sentence; for a toy encoder its corpus's held-out agreement and
    pronoun sentences."""
    if is_byte_level(tokenizer):
        return ("Try a held-out WordNet text the encoder never saw, or a sentence of your own:",
                {"held-out": english_examples(1)[0], "yours": STUDENT_SENTENCE})
    return ("Held-out sentences the encoder never saw:",
            {name: mask_words(list(it.words), [it.index])
             for name, it in (("agreement", agreement_items(1)[0]), ("pronoun", pronoun_items(1)[0]))})


def english_examples(n: int = 2) -> tuple[str, ...]:
    """n sentences of the held-out WordNet sample (never trained on) with one word hidden (default_masks), read once
    per version of the sample's file (its path, mtime and size: a rebuilt sample is read again)."""
    path = english.HELDOUT_PATH
    info = path.stat() if path.exists() else None  # missing: load_heldout says so, in words
    return _english_examples(n, str(path), info and (info.st_mtime_ns, info.st_size))


# lru_cache, not ui.cache.cached (ui-only): a pure function of immutable arguments, the file's identity among them
@functools.lru_cache(maxsize=4)
def _english_examples(n: int, _path: str, _stamp: tuple[int, int] | None) -> tuple[str, ...]:
    out = []
    for text in load_heldout()["wordnet"]:
        words = text.split()
        if 7 <= len(words) <= 14 and all(w.isalpha() for w in words) and any(w in ("the", "a") for w in words[:-1]):
            out.append(mask_words(words, default_masks(words)))
        if len(out) == n:
            break
    return tuple(out)


def masked_text(words: list[str], pieces: list[str], picked: list[int]) -> tuple[str, list[str | None]]:
    """The sentence the encoder reads (picked words -> <mask>) and the hidden word of each <mask>, in order
    (None for a <mask> typed in the text)."""
    text = mask_words(words, picked)
    answers = [pieces[i] if i in picked else None for i in range(len(words)) if i in picked or pieces[i] == MASK]
    return text, answers


def masked_run(model: TinyTransformer, tokenizer, text: str, top_k: int = MAX_TOP_K) -> dict:
    """One traced encoder pass: the labels (<unk> where the tokenizer read one), each mask's position, top-k
    fill-ins and full distribution, and every head's attention (L, H, T, T)."""
    run = run_masked(model, tokenizer, text, top_k=top_k, trace=True)
    unk = tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=text)


def masked_ids_run(model: TinyTransformer, tokenizer, b: Blanks, top_k: int = MAX_TOP_K) -> dict:
    """masked_run on the ids of `b` as they are (mlm.run_masked_ids): the same dict, its labels from `b`."""
    run = run_masked_ids(model, tokenizer, list(b.ids), list(b.labels), top_k=top_k, trace=True)
    unk = tokenizer.token_to_id(UNK)
    tokens = [UNK if int(i) == unk else t for t, i in zip(run.tokens, run.ids.tolist())]
    attention = run.trace.stack("probs")[:, 0].numpy()  # (L, H, T, T)
    return dict(tokens=tokens, positions=run.mask_positions, fills=run.fills, probs=run.probs.numpy(),
                attention=attention, text=b.text)


def fill_rows(tokenizer, run: dict, answers: list[str | None], answer_ids: list[int | None] | None = None
              ) -> list[dict[str, str]]:
    """Per mask: the top fill-in, and where the hidden word ranks among all V words (`answer_ids`: the hidden
    tokens' ids where the label is not the vocabulary entry, as a byte-level BPE's ' baked' for 'Ġbaked')."""
    rows = []
    ids = list(answer_ids) if answer_ids is not None else [None] * len(answers)
    for n, (pos, fills, p, ans, aid) in enumerate(zip(run["positions"], run["fills"], run["probs"], answers, ids)):
        i = None if ans is None else aid if aid is not None else tokenizer.token_to_id(ans)
        rows.append({"mask": f"{n + 1} (token {pos})", "top-1": fills[0][0], "p(top-1)": f"{fills[0][1]:.3f}",
                     "hidden word": "— (typed <mask>)" if ans is None else ans,
                     "p(hidden word)": "—" if i is None or ans == UNK else f"{p[i]:.3f}",
                     "its rank": ("not in the vocabulary" if ans == UNK else "—") if i is None or ans == UNK
                     else f"{int((p > p[i]).sum()) + 1} of {len(p)}"})
    return rows


def both_sides_facts(attention: np.ndarray, layer: int, head: int, positions: list[int]) -> list[Fact]:
    """Each <mask> puts some of its attention on the tokens after it in this head: (L, H, T, T) attention."""
    T = attention.shape[-1]
    out = []
    for n, p in enumerate(positions):
        later, after = float(attention[layer, head, p, p + 1:].sum()), T - 1 - p
        out.append(Fact(later > 0, f"`<mask>` {n + 1} (token {p}) puts {later:.3f} of its attention on the {after} "
                                   f"token{'' if after == 1 else 's'} after it in this head: it reads both sides. A "
                                   "causal decoder gets exactly 0 there."))
    return out


def row_sum_text(attention: np.ndarray) -> str:
    return f"Row sums: max |1 − sum| = {row_sum_error(attention):.0e} over every head and query."


# -- what the page says ------------------------------------------------------------------------------------------------
STUDENT_SENTENCE = "My grandmother baked <mask> while the storm knocked out the <mask>"
