"""Masked language modelling (BERT): choose 15 % of the tokens, hide them, and predict them from both sides.

    inputs, targets = mask_tokens(ids, mask_id=4, vocab_size=V)   # 80 % <mask>, 10 % random, 10 % unchanged
    fill_mask(model, tokenizer, "the keys near the dog <mask> ready")  # [[("are", 0.97), ...]]

The encoder is a TinyTransformer with mask="bidirectional": every position attends to every real token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from viz_model.model import IGNORE_INDEX, TinyTransformer, eval_mode
from viz_model.tokenizer import MASK, SPECIAL_TOKENS, display_token, encode

N_SPECIAL = len(SPECIAL_TOKENS)  # ids 0..4 are <pad> <unk> <bos> <eos> <mask> in every tokenizer here


def mask_tokens(ids: torch.Tensor, *, mask_id: int, vocab_size: int, p: float = 0.15,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption: (inputs, targets), both shaped like ids.

    Each non-special position is selected with probability p (special ids are never selected). Of the
    selected, 80 % become mask_id, 10 % a random non-special id, 10 % stay unchanged; the model must predict
    the original id at every selected position: targets = ids there, -100 (ignored by the loss) elsewhere.
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"the masking probability must be between 0 and 1, got {p}.")
    if vocab_size <= N_SPECIAL:
        raise ValueError(f"the vocabulary has no ordinary tokens to draw from (size {vocab_size}).")
    ids = torch.as_tensor(ids, dtype=torch.long)
    device = ids.device
    selectable = ids >= N_SPECIAL                                          # (..., T) never pad/bos/eos/mask/unk
    draw = torch.rand(ids.shape, generator=generator).to(device)          # which positions are selected
    how = torch.rand(ids.shape, generator=generator).to(device)           # what happens to a selected one
    random_ids = torch.randint(N_SPECIAL, vocab_size, ids.shape, generator=generator).to(device)
    selected = selectable & (draw < p)
    inputs = ids.clone()
    inputs[selected & (how < 0.8)] = mask_id
    swap = selected & (how >= 0.8) & (how < 0.9)
    inputs[swap] = random_ids[swap]
    targets = torch.where(selected, ids, torch.full_like(ids, IGNORE_INDEX))
    return inputs, targets


def masked_lm_loss(model: TinyTransformer, ids: torch.Tensor, targets: torch.Tensor,
                   key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """model(ids, targets, key_padding_mask=key_padding_mask).loss, with the LM head run only where a token is scored.

    Masked LM scores about 15 % of the positions, and with a large vocabulary the head (d_model x V per position) is
    most of a step's work: the same loss, the head's share cut by about 7 (targets: pad_id or -100 = not scored).
    """
    scored = (targets != IGNORE_INDEX) & (targets != model.config.pad_id)            # (B, T)
    last = model.config.n_layers - 1
    out = model(ids, key_padding_mask=key_padding_mask, trace_layers=(last,), logits=False)
    x = model.ln_f(out.trace.residual[last][scored])                                 # (N, d_model)
    return F.cross_entropy(model.head(x), targets[scored])


@dataclass
class MaskedRun:
    """One encoder pass over a sentence with <mask> tokens: what the Encoder page shows."""

    tokens: list[str]                       # labels, with <bos> first and <eos> last
    ids: torch.Tensor                       # (T,)
    mask_positions: list[int]               # token index of each <mask>, in order
    probs: torch.Tensor                     # (n_masks, V) softmax at each <mask>
    fills: list[list[tuple[str, float]]]    # top-k (token, probability) per <mask>
    trace: object | None                    # model Trace (attention of every layer) when traced
    unknown: list[str]                      # words the tokenizer does not know (shown as <unk>)


def run_masked(model: TinyTransformer, tokenizer, text: str, top_k: int = 5, trace: bool = True) -> MaskedRun:
    """Encode `text` as <bos> words <eos>, run the encoder once, read the distribution at every <mask>."""
    enc = encode(tokenizer, text, specials=(MASK,))  # a typed <mask> is a blank; any other special is text
    return run_masked_ids(model, tokenizer, enc.ids, enc.tokens, top_k=top_k, trace=trace, unknown=enc.unknown)


@torch.no_grad()
def run_masked_ids(model: TinyTransformer, tokenizer, ids: list[int], tokens: list[str], top_k: int = 5,
                   trace: bool = True, unknown: list[str] | None = None) -> MaskedRun:
    """run_masked on a sentence already tokenized: `ids` (no <bos>/<eos>, <mask> ids where a token is hidden) and
    their labels. A page that hides sub-word pieces of a byte-level BPE runs these ids as they are: re-encoding a
    text with <mask> inside a word would split the rest of that word differently."""
    mask_id = tokenizer.token_to_id(MASK)
    ids = [tokenizer.token_to_id("<bos>"), *ids, tokenizer.token_to_id("<eos>")]
    if len(ids) > model.config.max_len:
        raise ValueError(f"the sentence has {len(ids)} tokens with <bos> and <eos>; this encoder reads at most "
                         f"{model.config.max_len}. Shorten it.")
    positions = [t for t, i in enumerate(ids) if i == mask_id]
    if not positions:
        raise ValueError("there is nothing to fill in: write <mask> where a word should be predicted.")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}.")
    with eval_mode(model):
        x = torch.tensor([ids], device=model.device)  # (1, T)
        out = model(x, trace=trace)
    probs = torch.softmax(out.logits[0, positions].float(), dim=-1).cpu()  # (n_masks, V)
    top = torch.topk(probs, min(top_k, probs.shape[-1]), dim=-1)
    fills = [[(display_token(tokenizer, int(i)), float(p)) for p, i in zip(ps, ix)]
             for ps, ix in zip(top.values, top.indices)]
    return MaskedRun(["<bos>", *tokens, "<eos>"], x[0].cpu(), positions, probs, fills, out.trace, unknown or [])


def fill_mask(model: TinyTransformer, tokenizer, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
    """One list of the top_k (token, probability) per <mask> in `text`, in order."""
    return run_masked(model, tokenizer, text, top_k=top_k, trace=False).fills


def mask_words(words: list[str], positions: list[int]) -> str:
    """The sentence with the words at `positions` replaced by <mask> (the page's 'pick tokens to mask')."""
    bad = [p for p in positions if not 0 <= p < len(words)]
    if bad:
        raise ValueError(f"there is no word number {bad[0]} in a sentence of {len(words)} words.")
    return " ".join(MASK if i in set(positions) else w for i, w in enumerate(words))


__all__ = ["MaskedRun", "N_SPECIAL", "fill_mask", "mask_tokens", "mask_words", "masked_lm_loss", "run_masked",
           "run_masked_ids"]
