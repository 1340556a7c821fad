"""The bank by the river: to read "bank" the model needs "river", which comes later. The encoder's query reads
it in every head; a causal decoder's puts exactly 0 on it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_model import data
from viz_model.lecture import LECTURE_SENTENCES
from viz_model.lessons.common import Fact
from viz_model.lessons.encoder.models import is_byte_level, sentence_ids
from viz_model.model import TinyTransformer, eval_mode
from viz_model.tokenizer import BOS, EOS, UNK, encode

BANK = next(s for s in LECTURE_SENTENCES if "bank" in s.lower())  # "The bank by the river"
QUERY, KEY = "bank", "river"


@dataclass
class LookAhead:
    """'The bank by the river': how much `query` attends to `key` in each layer and head, (L, H)."""

    tokens: list[str]
    query_index: int
    key_index: int
    weight: torch.Tensor  # (L, H)


@torch.no_grad()
def attention_weight(model: TinyTransformer, tokenizer, text: str, query: str, key: str) -> LookAhead:
    """The attention weight from word `query` to word `key` (first occurrences) in every layer and head, on
    <bos> words <eos> as the encoder reads a sentence everywhere else (`masked_probs`, the Fill-in tab).

    A causal decoder gives exactly 0 when `key` comes after `query`; an encoder need not. A byte-level BPE reads
    the sentence as its tokens (' bank'): `query` and `key` must each be one token."""
    ids, labels, _ = bank_ids(tokenizer, text)
    words = ["<bos>", *data.source_words(text), "<eos>"] if not is_byte_level(tokenizer) else labels
    found = [w.strip().lower() for w in words]
    if query not in found or key not in found:
        raise ValueError(f"the sentence must contain both '{query}' and '{key}'"
                         + (", each as one token." if is_byte_level(tokenizer) else "."))
    with eval_mode(model):
        trace = model(torch.tensor([ids], device=model.device), trace=True).trace
    q, k = found.index(query), found.index(key)  # token indices, <bos> at 0
    weight = torch.stack([lt.probs[0, :, q, k] for lt in trace.layers]).float().cpu()  # (L, H)
    return LookAhead(words, q, k, weight)


def bank_ids(tokenizer, text: str) -> tuple[list[int], list[str], list[str]]:
    """<bos> + the sentence's word ids + <eos> in this tokenizer (as the Fill-in tab and attention_weight read it),
    the labels, and the words it does not know (none for a byte-level BPE: its labels are its tokens)."""
    if is_byte_level(tokenizer):
        enc = encode(tokenizer, text)
        bos, eos = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
        return [bos, *enc.ids, eos], [BOS, *enc.tokens, EOS], []
    words = data.source_words(text)
    unknown = [w for w in words if tokenizer.token_to_id(w) is None]
    return sentence_ids(tokenizer, words), [BOS, *(UNK if w in unknown else w for w in words), EOS], unknown


def reading_mismatch(runs: dict[str, tuple]) -> str:
    """A warning when the models' tokenizers read the sentence differently ({name: bank_ids(...)}), else ''."""
    if len({tuple(labels) for _, labels, _ in runs.values()}) == 1 and not any(u for *_, u in runs.values()):
        return ""
    return ("The two models' tokenizers do not read this sentence the same way: "
            + "; ".join(f"{n}: {' '.join(lab)}" for n, (_, lab, _) in runs.items()))


def best_head(look: LookAhead, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The (layer, head) among the first n_layers × n_heads that puts the most weight on the key."""
    best = np.unravel_index(int(look.weight[:n_layers, :n_heads].argmax()), (n_layers, n_heads))
    return int(best[0]), int(best[1])


def query_row(probs: np.ndarray, allowed: np.ndarray, query: int, head) -> tuple[np.ndarray, np.ndarray]:
    """The query's attention over every key, (T,), in one head or the heads' mean ("mean"), from one layer's
    (H, T, T) probs, and which keys it may read, (T,), from the (T, T) allowed."""
    return (probs.mean(0)[query] if head == "mean" else probs[head, query]), allowed[query]


def y_top(rows) -> float:
    """One y scale for several bar charts of (weights, allowed) rows: a quarter above the largest weight."""
    return min(1.0, 1.25 * max(float(r.max()) for r, _ in rows)) + 0.02


def shown_weight(look: LookAhead, layer: int, head) -> tuple[str, str]:
    """(which head, the measured weight on the key as the page's metric writes it) in one head or their mean."""
    w = look.weight[layer].numpy()                                       # (H,)
    shown = float(w.mean() if head == "mean" else w[head])
    return ("mean of the heads" if head == "mean" else f"head {head}"), (f"{shown:.4f}" if shown else "0 (exactly)")


def look_ahead_facts(enc: LookAhead, dec: LookAhead) -> list[Fact]:
    """The encoder's query reads the key in every head; the causal decoder's puts exactly 0 on it in every head."""
    e, d = enc.weight.numpy(), dec.weight.numpy()                       # (L, H) each
    L, H = e.shape
    layer, head = np.unravel_index(int(e.argmax()), e.shape)
    return [Fact(float(e.min()) > 0, f"Encoder: “{QUERY}” can read “{KEY}” in every head: up to {e.max():.3f} of its "
                                     f"attention (layer {layer}, head {head}), {e.mean():.3f} on average over the "
                                     f"{L * H} heads, and no head gives it exactly 0 (smallest {e.min():.2g})."),
            Fact(float(d.max()) == 0.0, f"Causal decoder: “{QUERY}” puts exactly {float(d.max()):g} on “{KEY}” in "
                                        f"all {d.size} heads: “{KEY}” comes later, so the mask hides it.")]


def weight_rows(look: LookAhead) -> list[dict[str, str]]:
    """The query's weight on the key, one row per layer, one column per head."""
    return [{f"head {j}": f"{x:.4f}" for j, x in enumerate(row)} for row in look.weight.numpy()]
