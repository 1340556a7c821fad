"""K reused as V blurs the roles: two sentences that differ in one word ('the cat sat' / 'the mat sat'), and
how alike the shared last word comes out of each variant (the cosine of its vectors)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from viz_model.lessons.qkv.variants import encode_sentence, traced
from viz_model.model import TinyTransformer
from viz_model.model_text import md_text, md_token
from viz_model.tokenizer import encode

# One word differs (an animate subject vs an object); the last word is shared. All words are in the corpus.
MINIMAL_PAIRS = (("the cat sat", "the mat sat"), ("the dog barked", "the box barked"),
                 ("the bird chirped", "the table chirped"), ("the king ruled", "the lamp ruled"),
                 ("the boy smiled", "the book smiled"))


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """cos(a, b) = a·b / (‖a‖‖b‖) of two vectors (ValueError for a zero vector: no direction)."""
    a, b = a.double().flatten(), b.double().flatten()
    na, nb = a.norm(), b.norm()
    if na == 0 or nb == 0:
        raise ValueError("a zero vector has no direction: the cosine is undefined.")
    return float(a @ b / (na * nb))


@dataclass
class PairResult:
    a: str
    b: str
    word: str                           # the shared last word
    position: int                       # its position (with <bos> at 0)
    differs_at: int                     # the one position where the sentences differ
    attn_cos: dict[str, list[float]]    # variant -> per layer: cosine of the attention output (after W_O)
    hidden_cos: dict[str, float]        # variant -> cosine of the final residual stream (before the last norm)


def _pair_positions(tok, a: str, b: str) -> tuple[int, int]:
    ea, eb = encode(tok, a, bos=True), encode(tok, b, bos=True)
    diff = [i for i, (x, y) in enumerate(zip(ea.ids, eb.ids)) if x != y]
    if len(ea.ids) != len(eb.ids) or len(diff) != 1:
        raise ValueError("a minimal pair has the same number of words and differs in exactly one of them.")
    if diff[0] == len(ea.ids) - 1:
        raise ValueError("the last word must be the shared one: put the differing word before it.")
    return diff[0], len(ea.ids) - 1


@torch.no_grad()
def minimal_pair(models: Mapping[str, TinyTransformer], tok, a: str, b: str) -> PairResult:
    """How differently each model represents the shared last word of two sentences that differ in one word."""
    differs_at, pos = _pair_positions(tok, a, b)
    attn_cos, hidden_cos = {}, {}
    for model in models.values():
        ta = traced(model, encode_sentence(model, tok, a, allow_unknown=False)[0])
        tb = traced(model, encode_sentence(model, tok, b, allow_unknown=False)[0])
        name = model.config.qkv
        attn_cos[name] = [cosine(la.attn_out[0, pos], lb.attn_out[0, pos]) for la, lb in zip(ta.layers, tb.layers)]
        hidden_cos[name] = cosine(ta.residual[-1][0, pos], tb.residual[-1][0, pos])
    word = encode(tok, a, bos=True).tokens[pos]
    return PairResult(a, b, word, pos, differs_at, attn_cos, hidden_cos)


def pair_rows(names: Sequence[str], attn: Sequence[list[float]], hidden: Sequence[float]) -> list[dict[str, str]]:
    """Per variant: the shared word's cosine after each layer's attention and of the final hidden state."""
    return [{"variant": name, **{f"attention output, layer {i}": f"{c:.3f}" for i, c in enumerate(row)},
             "final hidden state": f"{h:.3f}"} for name, row, h in zip(names, attn, hidden)]


def pair_caption(variants: Sequence[str], attn: Sequence[list[float]]) -> str:
    """Shared K = V against separate in layer 0 for this pair ('' unless both are shown)."""
    if "shared_kv" not in variants or "separate" not in variants:
        return ""
    kv, sep = attn[list(variants).index("shared_kv")][0], attn[list(variants).index("separate")][0]
    return (f"Layer 0 attention output: shared K = V {kv:.3f} against separate {sep:.3f} for this pair "
            f"({'more' if kv > sep else 'less'} alike). The Claims tab averages over all {len(MINIMAL_PAIRS)} pairs.")


def pair_text(pair: PairResult) -> str:
    return (f"The vectors of the shared word {md_token(pair.word)} (position {pair.position}) in “{md_text(pair.a)}” "
            f"and in “{md_text(pair.b)}”: for each layer its **attention output** (the attention block's output after "
            "W_O, before it is added to the residual stream) and the **final hidden state** (the residual stream after "
            "the last block, before the final norm). Cosine 1 = the same direction; the lecture expects K = V to blur "
            "the two sentences together.")
