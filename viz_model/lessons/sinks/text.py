"""What the lesson reads: a decoder transformer (checked, with a sentence where it is not one) and held-out
text, WordNet's glosses or Python's documentation, as the model's own token ids."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from viz_model.english import load_heldout
from viz_model.model import TinyTransformer
from viz_model.model_text import encode_for, start_token, uses_bos

SOURCES = {"wordnet": "WordNet glosses and examples", "python_docs": "Python's documentation"}


N_TEXTS = 64             # held-out texts for the head map and the loss comparison


POS_NAMES = {"rope": "RoPE", "alibi": "ALiBi", "none": "no", "learned": "learned", "sinusoidal": "sinusoidal"}


BATCH = 32


def check_model(model) -> None:
    """A clear ValueError for a model the lesson is not about: an encoder (no causal mask) or a non-transformer."""
    if not isinstance(model, TinyTransformer):
        raise ValueError(NOT_TRANSFORMER)
    if not model.config.causal:
        raise ValueError(NOT_CAUSAL)


def heldout_ids(ckpt, source: str = "wordnet", n: int = N_TEXTS) -> list[list[int]]:
    """n held-out texts as the model reads a text (its start token first where it uses one), at least 3 tokens
    each (the loss comparison predicts from the third token on), cut at the context."""
    if source not in SOURCES:
        raise ValueError(f"Pick a held-out source: {', '.join(SOURCES.values())}.")
    bos = uses_bos(ckpt)
    out = []
    for text in load_heldout()[source]:
        ids = encode_for(ckpt, text, max_len=ckpt.model.config.max_len, bos=bos).ids
        if len(ids) >= 3:
            out.append(list(ids))
        if len(out) == n:
            break
    return out


def _padded(seqs: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    ids = torch.full((len(seqs), max(len(s) for s in seqs)), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s))
    return ids


def first_label(ckpt, seqs: Sequence[Sequence[int]]) -> str:
    start = start_token(ckpt)
    return start[1] if uses_bos(ckpt) and start is not None else "the text's first word"


# -- what the page says ------------------------------------------------------------------------------------------
INTRO = ("Many heads put most of their weight on the first token, whatever it is. Xiao et al. (2023, "
         "StreamingLLM) call these **attention sinks**: softmax rows must sum to 1, and a head with nothing useful to "
         "read parks its weight on the one token every query can see. Below: how much each head of the sidebar's "
         "model does it on held-out text, what the loss does without that token, and why it matters for a KV cache "
         "that slides over a text longer than the context.")
NOT_TRANSFORMER = "This lesson reads a decoder transformer's attention; pick a transformer in the sidebar."
NOT_CAUSAL = ("This lesson is about decoders: a causal model reads a text left to right, so every query sees the "
              "first token and a KV cache slides over a long text. The sidebar's model is an encoder (every token "
              "reads both sides): pick a decoder in the sidebar.")
TOO_SHORT = "Every held-out text is shorter than 3 tokens for this model: there is nothing to compare."
