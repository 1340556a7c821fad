"""Head roles on a real checkpoint, measured on the fly with its own vocabulary (random token ids, no word list).

Sequences are [bos?] + r + r, r a run of `half` random ordinary tokens (no special or added tokens), so that
  previous-token  mean attention from t to t - 1        (queries t >= 1)
  first-token     mean attention from t to position 0   (the "sink": <bos> when the model has one)
  self            mean attention from t to t
  induction       on the second copy, mean attention from t to the token after its first occurrence (t - half + 1)
are measured on every head at once, with one traced forward pass. Names and bars as in viz_model.heads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from viz_model.heads import roles_json
from viz_model.model import TinyTransformer, eval_mode

if TYPE_CHECKING:  # lessons import torch only; the tokenizer is passed in
    from tokenizers import Tokenizer

REAL_ROLES = ("previous-token", "first-token", "self", "induction")
SEED = 4321


def ordinary_token_ids(tokenizer: Tokenizer, vocab_size: int) -> torch.Tensor:
    """(n,) ids of the tokenizer's plain vocabulary entries (special and added tokens left out), < vocab_size."""
    added = set(tokenizer.get_added_tokens_decoder())
    ids = sorted(i for i in tokenizer.get_vocab(with_added_tokens=False).values() if i not in added and i < vocab_size)
    if len(ids) < 2:
        raise ValueError("the tokenizer has fewer than two ordinary tokens; random sequences need more.")
    return torch.tensor(ids)


def repeated_random_ids(tokenizer: Tokenizer, vocab_size: int, *, n_sequences: int = 8, half: int = 16,
                        bos_id: int | None = None, seed: int = SEED) -> torch.Tensor:
    """(n_sequences, [1 +] 2 * half): a random run of ordinary tokens, then the same run again."""
    if half < 3:
        raise ValueError(f"the repeated run needs at least 3 tokens (so t - half + 1 differs from t - 1), got {half}.")
    pool = ordinary_token_ids(tokenizer, vocab_size)
    gen = torch.Generator().manual_seed(seed)
    run = pool[torch.randint(len(pool), (n_sequences, half), generator=gen)]  # (B, half)
    ids = torch.cat([run, run], dim=1)                                       # (B, 2 * half)
    if bos_id is not None:
        ids = torch.cat([torch.full((n_sequences, 1), int(bos_id)), ids], dim=1)  # (B, 1 + 2 * half)
    return ids


@torch.no_grad()
def role_scores_on_ids(model: TinyTransformer, ids: torch.Tensor, half: int) -> dict[str, torch.Tensor]:
    """Every REAL_ROLES score for every head, (L, H) each, from sequences built by repeated_random_ids."""
    B, T = ids.shape
    offset = T - 2 * half  # 1 with a <bos>, else 0
    with eval_mode(model):
        trace = model(ids.to(model.device), trace=True).trace
    probs = torch.stack([layer.probs.float().cpu() for layer in trace.layers])  # (L, B, H, T, T)
    t = torch.arange(1, T)
    q = torch.arange(offset + half, T)  # second copy
    return {
        "previous-token": probs[..., t, t - 1].mean(dim=(1, 3)),
        "first-token": probs[..., t, 0].mean(dim=(1, 3)),
        "self": probs[..., t, t].mean(dim=(1, 3)),
        "induction": probs[..., q, q - half + 1].mean(dim=(1, 3)),
    }


def real_head_roles(model: TinyTransformer, tokenizer: Tokenizer, *, bos_id: int | None = None,
                    n_sequences: int = 8, half: int = 16, seed: int = SEED) -> list[dict[str, Any]]:
    """JSON-ready, as heads.head_roles: [{"layer", "head", "role", "score", "scores": {role: score}}] per head."""
    half = min(half, (model.config.max_len - (bos_id is not None)) // 2)
    ids = repeated_random_ids(tokenizer, model.config.vocab_size, n_sequences=n_sequences, half=half,
                              bos_id=bos_id, seed=seed)
    return roles_json(role_scores_on_ids(model, ids, half), REAL_ROLES)


__all__ = ["REAL_ROLES", "ordinary_token_ids", "real_head_roles", "repeated_random_ids", "role_scores_on_ids"]
