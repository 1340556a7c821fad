"""What the Masks page proves: additive -inf vs multiplied masks, padding invisibility, causal = prefix runs,
the dependency map, and permutation equivariance without positions."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from viz_model.lessons.common import prefix_check  # noqa: F401  (the Masks page's check: causal = one pass)
from viz_model.model import TinyTransformer


def _ids2d(ids) -> torch.Tensor:
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids[None] if ids.ndim == 1 else ids  # (B, T)


# -- masks --------------------------------------------------------------------------------------
@dataclass
class MaskEffects:
    additive: torch.Tensor          # (T, T) 0 / -inf
    masked_scores: torch.Tensor     # (T, T) S + M
    probs: torch.Tensor             # (T, T) softmax(S + M): blocked cells exactly 0
    probs_multiplied: torch.Tensor  # (T, T) softmax(S) * mask: blocked cells 0 but rows no longer sum to 1
    row_sums: torch.Tensor          # (T,)
    row_sums_multiplied: torch.Tensor  # (T,)


def mask_effects(scores: torch.Tensor, allowed: torch.Tensor) -> MaskEffects:
    """Apply a boolean mask (True = may attend) to one head's scores both ways."""
    additive = torch.zeros_like(scores).masked_fill(~allowed, float("-inf"))
    masked = scores + additive
    empty = ~allowed.any(-1, keepdim=True)  # a row with no allowed key: softmax of all -inf is NaN
    probs = torch.softmax(masked.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    multiplied = torch.softmax(scores, dim=-1) * allowed
    return MaskEffects(additive, masked, probs, multiplied, probs.sum(-1), multiplied.sum(-1))


# -- padding ------------------------------------------------------------------------------------
@dataclass
class PaddingCheck:
    key_mask: torch.Tensor   # (B, T) True = real token (keys that may be attended)
    loss_mask: torch.Tensor  # (B, T-1) True = the target at t+1 is real and counts in the loss
    max_diff: float          # max |logits(pads) - logits(other ids in pad slots)| at real positions
    n_real: int


@torch.no_grad()
def padding_check(model: TinyTransformer, ids, pad_id: int, replacement: int) -> PaddingCheck:
    """Run the padded batch, then again with every pad replaced by `replacement`: real positions must agree."""
    ids = _ids2d(ids).to(model.device)
    real = ids != pad_id                                                    # (B, T)
    a = model(ids, key_padding_mask=real).logits
    b = model(ids.masked_fill(~real, replacement), key_padding_mask=real).logits
    diff = (a - b).abs().amax(-1)[real]                                     # (n_real,)
    return PaddingCheck(real.cpu(), real[:, 1:].cpu(), diff.max().item(), int(real.sum()))


# -- what depends on what -------------------------------------------------------------------------
def dependency_map(model: TinyTransformer, ids, attn_mask: torch.Tensor | None = None,
                   chunk: int = 512) -> torch.Tensor:
    """(T, T) Frobenius norms ||d h_t / d e_s||, h = final_hidden, e = the token embedding fed in.

    A private copy of the (shared, read-only) model gets a forward hook on its token embedding, so the
    embeddings can be fed in and differentiated without touching model.py. Exact: one backward per
    output coordinate, batched.
    """
    ids = _ids2d(ids)[:1].to(model.device)
    T, d = ids.shape[1], model.config.d_model
    twin = copy.deepcopy(model).eval().requires_grad_(False)
    with torch.no_grad():
        emb0 = twin.tok_emb(ids)                                            # (1, T, d)
    fed: dict[str, torch.Tensor] = {}
    twin.tok_emb.register_forward_hook(lambda mod, inp, out: fed["e"])
    hidden: dict[str, torch.Tensor] = {}
    twin.ln_f.register_forward_hook(lambda mod, inp, out: hidden.__setitem__("h", out))
    mask = attn_mask.bool() if attn_mask is not None else None
    sq = torch.zeros(T, T, dtype=torch.float64)
    coords = [(t, i) for t in range(T) for i in range(d)]                   # one backward per (t, i)
    for start in range(0, len(coords), chunk):
        part = coords[start: start + chunk]
        e = emb0.repeat(len(part), 1, 1).requires_grad_(True)               # (N, T, d)
        fed["e"] = e
        twin(ids.repeat(len(part), 1), attn_mask=mask)
        t_idx = torch.tensor([c[0] for c in part])
        i_idx = torch.tensor([c[1] for c in part])
        picked = hidden["h"][torch.arange(len(part)), t_idx, i_idx]          # (N,)
        (grad,) = torch.autograd.grad(picked.sum(), e)                      # (N, T, d)
        sq.index_add_(0, t_idx, grad.pow(2).sum(-1).double().cpu())         # rows: output position t
    return sq.sqrt().float()


# -- permutation ----------------------------------------------------------------------------------
@torch.no_grad()
def final_hidden(model: TinyTransformer, ids, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(T, d_model) final hidden state: the last block's output after the final LayerNorm (what the head reads)."""
    out = model(_ids2d(ids).to(model.device), trace=True, attn_mask=attn_mask)
    return model.ln_f(out.trace.residual[-1])[0].cpu()


def match_positions(ids_a: list[int], ids_b: list[int]) -> list[tuple[int, int]]:
    """Pair each position of a with the same token in b (k-th occurrence with k-th occurrence)."""
    if sorted(ids_a) != sorted(ids_b):
        raise ValueError("the two sentences must contain the same tokens in a different order.")
    used: set[int] = set()
    pairs = []
    for i, tid in enumerate(ids_a):
        j = next(j for j, u in enumerate(ids_b) if u == tid and j not in used)
        used.add(j)
        pairs.append((i, j))
    return pairs


def permutation_distances(model: TinyTransformer, ids_a: list[int], ids_b: list[int],
                          attn_mask: bool = False) -> torch.Tensor:
    """(T,) ||h_a[i] - h_b[perm(i)]|| for each token of a; attn_mask False = no mask, True = causal."""
    T = len(ids_a)
    mask = torch.ones(T, T, dtype=torch.bool)
    if attn_mask:
        mask = mask.tril()
    ha, hb = final_hidden(model, ids_a, mask), final_hidden(model, ids_b, mask)
    pairs = match_positions(ids_a, ids_b)
    return torch.stack([(ha[i] - hb[j]).norm() for i, j in pairs])
