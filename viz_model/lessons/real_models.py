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

from viz_model.heads import (
    REAL_ROLES,
    SEED,
    ordinary_token_ids,
    repeated_random_ids,
    role_scores_on_ids,
    roles_json,
)
from viz_model.model import TinyTransformer

if TYPE_CHECKING:  # lessons import torch only; the tokenizer is passed in
    from tokenizers import Tokenizer

def real_head_roles(model: TinyTransformer, tokenizer: Tokenizer, *, bos_id: int | None = None,
                    n_sequences: int = 8, half: int = 16, seed: int = SEED) -> list[dict[str, Any]]:
    """JSON-ready, as heads.head_roles: [{"layer", "head", "role", "score", "scores": {role: score}}] per head."""
    half = min(half, (model.config.max_len - (bos_id is not None)) // 2)
    ids = repeated_random_ids(tokenizer, model.config.vocab_size, n_sequences=n_sequences, half=half,
                              bos_id=bos_id, seed=seed)
    return roles_json(role_scores_on_ids(model, ids, half), REAL_ROLES)


__all__ = ["REAL_ROLES", "ordinary_token_ids", "real_head_roles", "repeated_random_ids", "role_scores_on_ids"]
