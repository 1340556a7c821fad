"""The batch dimension on a real model: every sample gets its own T × T attention and nothing mixes samples,
so a padded second sentence changes nothing for the first; the loss is the mean over every scored position."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from viz_model.lessons.common import Check, Fact
from viz_model.lessons.normalization.axes import num
from viz_model.model import IGNORE_INDEX, TinyTransformer, eval_mode, lm_loss
from viz_model.tokenizer import PAD, Encoded, encode


@dataclass
class BatchIndependence:
    shapes: dict[str, tuple[int, ...]]   # q, k, v, probs of layer 0: (N, H, T, d_k) and (N, H, T, T)
    mask_shape: tuple[int, ...]          # the additive causal mask: broadcast over N and H
    sample1_change: float                # max |Δ logits of sample 1| when sample 2's tokens change (0.0)
    token_losses: torch.Tensor           # (N, T) per-position, per-sample cross-entropy (0 where not scored)
    scored: torch.Tensor                 # (N, T) bool: targets that count
    mean_loss: float                     # token_losses[scored].mean()
    model_loss: float                    # the model's own loss on the batch
    loss_difference: float               # |mean_loss − model_loss|


def batch_independence(model: TinyTransformer, ids: torch.Tensor, targets: torch.Tensor | None = None,
                       seed: int = 0, training: bool = False) -> BatchIndependence:
    """Run a batch traced; change every token of sample 2 (index 1) and compare sample 1's logits; split the
    loss into its per-position, per-sample terms. targets default to the next tokens (last one not scored).
    training=True runs in train mode, where a BatchNorm model takes statistics over the batch (and so mixes
    the samples); in eval mode (default) and with LayerNorm/RMSNorm the samples never meet."""
    ids = torch.as_tensor(ids).to(model.device)
    if ids.ndim != 2 or ids.shape[0] < 2:
        raise ValueError(f"give at least two sequences, shape (N, T) with N >= 2; got {tuple(ids.shape)}.")
    pad = model.config.pad_id
    if targets is None:
        targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], pad)], dim=1)  # (N, T)
    targets = targets.to(model.device)
    other = ids.clone()
    gen = torch.Generator().manual_seed(seed)
    other[1] = torch.randint(1, model.config.vocab_size, (ids.shape[1],), generator=gen).to(model.device)
    with eval_mode(model, training=training):
        with torch.no_grad():
            out = model(ids, targets=targets, trace=True)
            changed = model(other, trace=True).logits
    layer = out.trace.layers[0]
    flat = targets.masked_fill(targets == pad, IGNORE_INDEX)
    # The model's own loss terms: cross-entropy over a transposed (N, vocab, T) tensor rounds otherwise, and on the
    # English model's 8,192 words its mean parted from the loss by 1.2e-5 (> LOSS_TOL).
    losses = lm_loss(out.logits, targets, pad, reduction="none")  # (N, T)
    scored = flat != IGNORE_INDEX
    mean = float(losses[scored].mean())
    shapes = {name: tuple(getattr(layer, name).shape) for name in ("q", "k", "v", "probs")}
    return BatchIndependence(shapes, tuple(layer.mask.shape), float((out.logits[0] - changed[0]).abs().max()),
                             losses, scored, mean, float(out.loss), abs(mean - float(out.loss)))


@torch.no_grad()
def batch_attention(model, ids: torch.Tensor) -> torch.Tensor:
    """Every layer's attention weights for a batch: (L, N, H, T, T), each sample its own matrices."""
    with eval_mode(model):
        return model(ids.to(model.device), trace=True).trace.stack("probs")


LOSS_TOL = 1e-5                   # the mean of the loss terms vs the model's own loss


def batch_ids(tokenizer, enc: Encoded, other: str, pad_id: int, max_len: int,
              bos: bool) -> tuple[list[list[int]], list[list[str]]]:
    """Sample 1 = the typed sentence (enc), sample 2 = `other` encoded; the shorter one padded at the end."""
    second = encode(tokenizer, other, max_len=max_len, bos=bos)
    T = max(len(enc.ids), len(second.ids))
    rows, tokens = [], []
    for e in (enc, second):
        rows.append([*e.ids, *[pad_id] * (T - len(e.ids))])
        tokens.append([*e.tokens, *[PAD] * (T - len(e.ids))])
    return rows, tokens


def batch_facts(model, ids: Sequence[Sequence[int]]) -> dict:
    """batch_independence's measurements and one traced pass of the batch (every layer's weights, (L, N, H, T, T)),
    as plain numbers and arrays."""
    ids = torch.tensor(ids)
    r = batch_independence(model, ids)
    return dict(shapes=r.shapes, mask_shape=r.mask_shape, change=r.sample1_change, mean=r.mean_loss,
                model_loss=r.model_loss, diff=r.loss_difference, losses=r.token_losses.cpu().numpy(),
                scored=r.scored.cpu().numpy(), probs=batch_attention(model, ids).numpy())


def shapes_note(f: dict) -> str:
    N, H = f["shapes"]["q"][:2]
    return (f"Working shapes in layer 0 of the sidebar's model, from a live trace: q, k, v are "
            f"**(N, H, T, d_k) = {f['shapes']['q']}**, the attention weights **(N, H, T, T) = "
            f"{f['shapes']['probs']}**: N·H = {N * H} separate T×T matrices.")


def mask_claim(f: dict, causal: bool) -> Fact:
    N, H = f["shapes"]["q"][:2]
    mask = f["mask_shape"]
    return Fact(math.prod(mask[:-2]) == 1, f"The {'causal ' if causal else ''}mask is one {mask} tensor, "
                                           f"broadcast over N = {N} and H = {H}: every sample gets the same rule.")


def independence_claim(f: dict) -> Fact:
    return Fact(f["change"] == 0.0, f"Replacing every token of sample 2 by random ids changes sample 1's logits by "
                                    f"{num(f['change'])}: the samples of a batch never meet.")


def loss_columns(f: dict, tokens: list[list[str]]) -> dict[str, list[str]]:
    """The loss term by term: a column per position t→t+1, a cell per sample ("—" where the target is not scored)."""
    losses, scored = f["losses"], f["scored"]
    return {f"{t}→{t + 1}": [f"{losses[n, t]:.3f} ({tokens[n][t + 1]})" if scored[n, t] else "—"
                             for n in range(len(tokens))] for t in range(losses.shape[1] - 1)}


def loss_claim(f: dict) -> Check:
    return Check(f["diff"], LOSS_TOL, f"The mean of the {int(f['scored'].sum())} scored terms, {f['mean']:.4f}, is "
                                      f"the model's loss on the batch, {f['model_loss']:.4f}")


# -- what the page says ------------------------------------------------------------------------------------------
LOSS_TERMS = (
    "**The loss, term by term**: each cell is one position's cross-entropy for predicting the next token, named in "
    "brackets (— where the target is `<pad>`: not scored). The `<pad>` positions only read earlier tokens (causal "
    "mask), so they change nothing for the real ones.")
BATCHNORM_MODEL = ("This model uses BatchNorm: in training mode it would take statistics over the batch, and then the "
                   "samples do meet. The check above runs in eval mode (running statistics).")
