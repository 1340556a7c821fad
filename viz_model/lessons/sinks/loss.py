"""The loss without the first token: three passes over the same held-out texts scored on the same targets,
with key 0, without it, and with it hidden by the mask (its rows renormalised)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.lessons.common import Check
from viz_model.lessons.sinks.settings import streams_positions
from viz_model.lessons.sinks.text import BATCH, POS_NAMES, TOO_SHORT, _padded, check_model
from viz_model.masks import causal_mask
from viz_model.model import TinyTransformer, eval_mode


def hide_first_key(T: int, device=None) -> torch.Tensor:
    """(T, T) bool: causal, and key 0 hidden from every query but query 0 (which has nothing else to read)."""
    allowed = causal_mask(T, device)
    allowed[1:, 0] = False
    return allowed


@dataclass(frozen=True)
class LossComparison:
    as_is: np.ndarray      # per predicted token (the third token of each text on), nats
    dropped: np.ndarray    # the same targets with the first token removed from the input
    hidden: np.ndarray     # the same targets with key 0 hidden and each row renormalised

    def means(self) -> dict[str, float]:
        return {name: float(getattr(self, name).mean()) for name in ("as_is", "dropped", "hidden")}


def _target_losses(logits: torch.Tensor, seqs, first_target: int, offset: int) -> np.ndarray:
    """-log p of seq[first_target:] for each sequence, read at logits row t - 1 - offset."""
    lp = torch.log_softmax(logits.float().cpu(), -1)
    out = []
    for j, s in enumerate(seqs):
        t = torch.arange(first_target, len(s))
        out.append(-lp[j, t - 1 - offset, torch.tensor(list(s))[t]].double().numpy())
    return np.concatenate(out)


@torch.no_grad()
def loss_comparison(model: TinyTransformer, seqs: Sequence[Sequence[int]]) -> LossComparison:
    """The next-token loss on the same targets (each text's third token on): as is; with the first token dropped
    from the input; with the first token's key hidden from every later query (rows renormalised)."""
    check_model(model)
    seqs = [list(s) for s in seqs if len(s) >= 3]
    if not seqs:
        raise ValueError(TOO_SHORT)
    parts: dict[str, list[np.ndarray]] = {"as_is": [], "dropped": [], "hidden": []}
    pad = model.config.pad_id
    with eval_mode(model):
        for i in range(0, len(seqs), BATCH):
            chunk = seqs[i: i + BATCH]
            ids = _padded(chunk, pad).to(model.device)
            parts["as_is"].append(_target_losses(model(ids).logits, chunk, 2, 0))
            parts["dropped"].append(_target_losses(model(ids[:, 1:]).logits, chunk, 2, 1))
            hidden = model(ids, attn_mask=hide_first_key(ids.shape[1], model.device)).logits
            parts["hidden"].append(_target_losses(hidden, chunk, 2, 0))
    return LossComparison(*(np.concatenate(parts[k]) for k in ("as_is", "dropped", "hidden")))


def loss_table(cmp: LossComparison) -> list[dict[str, object]]:
    m = cmp.means()
    rows = [("as is", m["as_is"]), ("first token dropped", m["dropped"]),
            ("first token hidden, rows renormalised", m["hidden"])]
    return [{"input": name, "loss (nats)": round(v, 4), "perplexity": round(math.exp(v), 2),
             "change in loss": round(v - m["as_is"], 4)} for name, v in rows]


@torch.no_grad()
def renormalised_rows_claim(model: TinyTransformer, ids: Sequence[int]) -> Check:
    """Layer 0 (the same input in both passes): the probs under hide_first_key equal the unmasked probs with column
    0 set to zero and each row divided by its new sum."""
    x = torch.tensor([list(ids)], device=model.device)
    with eval_mode(model):
        free = model(x, trace_layers=(0,), logits=False).trace.layers[0].probs[0].double()
        hidden = model(x, attn_mask=hide_first_key(len(ids), model.device), trace_layers=(0,),
                       logits=False).trace.layers[0].probs[0].double()
    by_hand = free.clone()
    by_hand[:, 1:, 0] = 0.0
    by_hand = by_hand / by_hand.sum(-1, keepdim=True)
    return Check(float((by_hand - hidden).abs().max()), 1e-5, CLAIM_RENORM.format(T=len(ids)))


def loss_claims(model: TinyTransformer, seqs: Sequence[Sequence[int]], cmp: LossComparison) -> list[Check]:
    """The renormalised-row equivalence on the first held-out text; and, for a model whose positions are only
    distances (RoPE, ALiBi, none), that hiding key 0 gives the same losses as dropping the token."""
    claims = [renormalised_rows_claim(model, seqs[0])]
    if streams_positions(model):
        err = float(np.abs(cmp.hidden - cmp.dropped).max())
        claims.append(Check(err, 1e-3, CLAIM_RELATIVE.format(pos=POS_NAMES[model.config.pos_encoding])))
    return claims


def loss_sentence(cmp: LossComparison) -> str:
    m = cmp.means()
    d, h = m["dropped"] - m["as_is"], m["hidden"] - m["as_is"]

    def say(x: float) -> str:
        return (f"raises the loss by {x:.3f} nats (perplexity × {math.exp(x):.2f})" if x > 0.01 else
                f"lowers the loss by {-x:.3f} nats" if x < -0.01 else f"barely changes the loss ({x:+.3f} nats)")
    return (f"On {len(cmp.as_is):,} predicted tokens: dropping the first token {say(d)}; hiding it and "
            f"renormalising the rows {say(h)}.")


# -- what the page says ------------------------------------------------------------------------------------------
LOSS_TITLE = "Next-token loss on the same targets"
LOSS_INTRO = ("Three passes over the same held-out texts, scored on the same targets (each text's third token on): "
              "as is; with the first token **dropped** from the input (every token moves one position left); and "
              "with the first token **hidden**: an attention mask takes key 0 away from every query but query 0, "
              "which is exactly the attention rows with that column removed and renormalised.")
CLAIM_RENORM = ("hiding key 0 with the attention mask gives exactly the rows with key 0 removed and renormalised "
                "(layer 0, {T} tokens)")
CLAIM_RELATIVE = ("with {pos} positions a score depends only on the distance between query and key, so hiding key 0 "
                  "gives every remaining token exactly the loss it gets with the first token dropped (max difference "
                  "per token)")
