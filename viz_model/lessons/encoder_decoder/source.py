"""The page's source sentence and its translation: the toy language's words, the source as the model reads it
with its reference translation, and every decoding step as the page shows it."""

from __future__ import annotations

from dataclasses import dataclass

from viz_model import data
from viz_model.generate import Sampling
from viz_model.lessons.common import Fact, StepView
from viz_model.seq2seq import Seq2SeqTransformer, decode_steps
from viz_model.tokenizer import BOS, EOS, Encoded, display_token

# Sentences of the toy language (the lecture's first, two the model never trained on), then two lecture sentences
# outside it: the model translates them anyway, and the page says there is no reference.
EXAMPLES = ("The cat sat on the mat", "the old king thanked the children when they giggled",
            "the keys near the dog are on the table", "the happy girl waited by the river at night",
            "after the tall boy saw the girl , she smiled all day", "the little dog slept under the old table",
            "The bank by the river", "She gave him the book because he asked for it")


def toy_vocabulary(tokenizer) -> tuple[int, int]:
    """(English words the translator reads, words of the toy language it writes), counted in its tokenizer."""
    english = {*data.WORD_CLASSES, *(w for pair in data.MULTIWORD for w in pair)}  # the toy grammar's words
    toy, vocab = set(data.target_vocabulary()), tokenizer.get_vocab()
    return sum(1 for w in vocab if w in english), sum(1 for w in vocab if w in toy)


def toy_language_text(tokenizer) -> str:
    """What the page says up front: the translator knows a toy language, of so many words, and nothing else."""
    n_english, n_toy = toy_vocabulary(tokenizer)
    return (f"This translator speaks a **toy language of {n_toy} words** (toy Pig Latin) and reads only the "
            f"**{n_english} English words** of its toy grammar: any other word is `<unk>`, and a sentence outside the "
            "grammar gets no reference translation. Pick one of its sentences in the picker below, or type your own "
            "with its words.")


@dataclass(frozen=True)
class Source:
    text: str                    # the vocabulary entries the model reads (after truncation), joined by spaces
    ids: tuple[int, ...]         # source ids, <eos> last
    labels: tuple[str, ...]      # vocabulary entries ('<unk>' for unknown words), '<eos>' last
    reference: str | None        # the toy language's translation, None outside it
    alignment: tuple[int, ...] | None
    reason: str | None           # why the source is outside the toy language


def source_of(tokenizer, enc: Encoded) -> Source:
    """The source as the model reads it (tokenizer.encode's pieces, <eos> added) with the toy language's reference
    translation of the words as typed, or why there is none."""
    try:  # the words as typed, so that a refusal names the word ("'zebra' is not a word of the toy language")
        reference, alignment = data.reference_translation(" ".join(enc.tokens))
        reason = None
    except ValueError as e:
        reference, alignment, reason = None, None, str(e)
    # " ".join(pieces): the words as the model reads them (lower case, <unk>), re-encoding to the same ids
    return Source(" ".join(enc.pieces), (*enc.ids, tokenizer.token_to_id(EOS)), (*enc.pieces, EOS), reference,
                  None if alignment is None else tuple(alignment), reason)


def decode_views(model: Seq2SeqTransformer, tokenizer, src_ids, strategy: Sampling, seed: int,
                 n_top: int = 10) -> list[StepView]:
    """Every decoding step of this setting (encoder once, cross K/V reused, decoder KV cache) as the page shows it."""
    views = []
    for d in decode_steps(model, list(src_ids), strategy=strategy, seed=seed, max_new_tokens=model.config.max_len,
                          tokenizer=tokenizer, bos_id=tokenizer.token_to_id(BOS), eos_id=tokenizer.token_to_id(EOS)):
        g = d.step
        views.append(StepView.of(g, g.token, lambda top: [display_token(tokenizer, int(i)) for i in top],
                                 d.cross_attention, n_top))
    return views


def decoder_input(tokenizer, steps: list[StepView]) -> tuple[list[int], list[str], list[str]]:
    """(ids, tokens, row labels) of <bos> + the chosen words (the last one too while decoding goes on): row j is
    the query that chose word j + 1, labelled 'input → chosen' ('?' for the word not chosen yet)."""
    fed = steps[:-1] if steps and steps[-1].stop_reason else steps
    ids, tokens = [tokenizer.token_to_id(BOS), *(v.token_id for v in fed)], [BOS, *(v.token for v in fed)]
    produced = [v.token for v in steps] + ["?"] * (len(ids) - len(steps))
    return ids, tokens, [f"{t} → {p}" for t, p in zip(tokens, produced)]


def translation_claim(words: list[str], reference: str) -> Fact:
    same = " ".join(words) == reference
    return Fact(same, "The translation equals the reference word for word." if same else
                "The translation differs from the reference.")


# -- what the page says ------------------------------------------------------------------------------------------------
TRANSLATOR = "translate"  # the shipped translator's model key (assets/models/translate.*)

MISSING_TRANSLATOR = ("The shipped translation model is missing: there is no `assets/models/translate.safetensors` "
                      "(with its `.json`). Build it with `python scripts/build_assets.py translate`, or train one on "
                      "the Train page (task “translation (encoder-decoder)”) and come back.")

NO_REFERENCE = ("This source is not in the toy language, so there is no known alignment to compare with. Below: the "
                "cross-attention of the model's own translation.")
