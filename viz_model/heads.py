"""Score every attention head on held-out data and name its role.

Scores (all in [0, 1], averaged over held-out sequences, queries t >= 1 on real tokens):
  previous-token  mean attention from t to t-1
  first-token     mean attention from t to position 0 (the <bos> "sink")
  self            mean attention from t to t
  coreference     share of held-out pronoun sentences whose pronoun attends most to its antecedent
  induction       on a random sequence repeated twice, mean attention from the second copy's token t to
                  the token right after its first occurrence (t - n + 1)

    roles = head_roles(model, tokenizer, task)   # a JSON-ready list of dicts, one per head
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from viz_model.data import TaskData, pronoun_examples, toy_example
from viz_model.model import TinyTransformer, eval_mode

ROLES = ("previous-token", "first-token", "self", "coreference", "induction")
# A head earns a role when its score clears the bar; the role with the largest score/bar ratio wins.
THRESHOLDS = {"previous-token": 0.5, "first-token": 0.6, "self": 0.5, "coreference": 0.6, "induction": 0.3}
N_SEQUENCES = 128
SEED = 4321


@torch.no_grad()
def _probs(model: TinyTransformer, seqs: list[list[int]], pad_id: int) -> torch.Tensor:
    """Attention probs for right-padded sequences: (L, B, H, T, T). Causal, so pads never reach real rows."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    with eval_mode(model):
        trace = model(ids.to(model.device), trace=True).trace
    return trace.stack("probs")  # (L, B, H, T, T)


def positional_scores(probs: torch.Tensor, lengths: list[int]) -> dict[str, torch.Tensor]:
    """previous-token, first-token and self scores, each (L, H)."""
    L, B, H, T, _ = probs.shape
    valid = torch.zeros(B, T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        valid[i, 1:n] = True  # queries 1..n-1 (query 0 can only look at itself)
    t = torch.arange(T)
    prev = probs[..., t[1:], t[:-1]]               # (L, B, H, T-1): query t -> key t-1
    first = probs[..., :, 0]                       # (L, B, H, T)
    diag = probs.diagonal(dim1=-2, dim2=-1)        # (L, B, H, T)
    w = valid.float()[None, :, None, :]            # (1, B, 1, T)
    denom = valid.sum()

    def mean(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return (x * weights).sum(dim=(1, 3)) / denom  # (L, H)

    return {"previous-token": mean(prev, w[..., 1:]), "first-token": mean(first, w), "self": mean(diag, w)}


def coreference_scores(model: TinyTransformer, tokenizer, n: int = N_SEQUENCES) -> torch.Tensor:
    """(L, H): share of held-out pronoun sentences where the pronoun's attention peaks on its antecedent."""
    bos = tokenizer.token_to_id("<bos>")
    exs = pronoun_examples(n, seed=SEED, split="heldout")
    seqs = [[bos, *(tokenizer.token_to_id(w) for w in ex.words)] for ex in exs]
    probs = _probs(model, seqs, model.config.pad_id)  # (L, B, H, T, T)
    b, pron = torch.arange(len(exs)), torch.tensor([ex.pronoun_index + 1 for ex in exs])
    rows = probs.transpose(0, 1)[b, :, :, pron]  # (B, L, H, T): each sentence's pronoun row
    hits = rows.argmax(-1) == torch.tensor([ex.antecedent_index + 1 for ex in exs])[:, None, None]
    return hits.float().mean(0)


def induction_scores(model: TinyTransformer, tokenizer, n: int = 64) -> torch.Tensor:
    """(L, H): attention from the second copy of a repeated random sequence to 'the token after last time'.

    Lengths vary (6..10) so that a head attending at a fixed distance cannot pass for an induction head.
    """
    rng = random.Random(SEED)
    bos = tokenizer.token_to_id("<bos>")
    exs = [toy_example("induction", rng, 6, 10) for _ in range(n)]
    seqs = [[bos, *(tokenizer.token_to_id(w) for w in ex.words)] for ex in exs]
    probs = _probs(model, seqs, model.config.pad_id)  # (L, B, H, T, T)
    per_seq = []
    for i, ex in enumerate(exs):
        half = len(ex.words) // 2
        q = torch.arange(1 + half, 1 + 2 * half)    # second copy positions (with <bos> at 0)
        per_seq.append(probs[:, i, :, q, q - half + 1].mean(-1))  # the token that followed it last time
    return torch.stack(per_seq, 1).mean(1)


def score_heads(model: TinyTransformer, tokenizer, task: str = "lm") -> dict[str, torch.Tensor]:
    """Every role's score for every head: {role: (L, H) tensor}."""
    data = TaskData(task, tokenizer, heldout_size=N_SEQUENCES)
    seqs = [s[: model.config.max_len] for s in data.heldout_ids]
    scores = positional_scores(_probs(model, seqs, model.config.pad_id), [len(s) for s in seqs])
    L, H = model.config.n_layers, model.config.n_heads
    scores["coreference"] = coreference_scores(model, tokenizer) if task == "lm" else torch.zeros(L, H)
    scores["induction"] = induction_scores(model, tokenizer)
    return scores


def role_of(scores: dict[str, float]) -> tuple[str, float]:
    """The role whose score clears its bar by the largest ratio, else ('broad', best plain score)."""
    cleared = {r: s / THRESHOLDS[r] for r, s in scores.items() if s >= THRESHOLDS[r]}
    if not cleared:
        return "broad", max(scores.values())
    best = max(cleared, key=cleared.get)
    return best, scores[best]


def head_roles(model: TinyTransformer, tokenizer, task: str = "lm") -> list[dict[str, Any]]:
    """JSON-ready: [{"layer", "head", "role", "score", "scores": {role: score}}] for every head."""
    return roles_json(score_heads(model, tokenizer, task), ROLES)


def roles_json(scores: dict[str, torch.Tensor], roles: Sequence[str]) -> list[dict[str, Any]]:
    """{role: (L, H) scores} -> one JSON-ready entry per head, each with its summary role (role_of)."""
    L, H = scores[roles[0]].shape
    out = []
    for layer in range(L):
        for head in range(H):
            per = {r: round(float(scores[r][layer, head]), 4) for r in roles}
            role, score = role_of(per)
            out.append({"layer": layer, "head": head, "role": role, "score": score, "scores": per})
    return out


def best_head(roles: list[dict[str, Any]], role: str) -> dict[str, Any]:
    """The head with the highest score for `role` (whatever its summary role is)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}.")
    return max(roles, key=lambda r: r["scores"][role])


# -- roles on repeated random tokens: any vocabulary (the real checkpoints' and the English model's measurement) ----
REAL_ROLES = ("previous-token", "first-token", "self", "induction")


def ordinary_token_ids(tokenizer, vocab_size: int) -> torch.Tensor:
    """(n,) ids of the tokenizer's plain vocabulary entries (special and added tokens left out), < vocab_size."""
    added = set(tokenizer.get_added_tokens_decoder())
    ids = sorted(i for i in tokenizer.get_vocab(with_added_tokens=False).values() if i not in added and i < vocab_size)
    if len(ids) < 2:
        raise ValueError("the tokenizer has fewer than two ordinary tokens; random sequences need more.")
    return torch.tensor(ids)


def repeated_random_ids(tokenizer, vocab_size: int, *, n_sequences: int = 8, half: int = 16,
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
