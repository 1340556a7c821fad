"""Attention as a soft database lookup: a query's q scores every key's k, the softmax turns the scores into
weights, and the answer is the weighted sum of the values, recomputed here beside the model's own head output."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.lessons.common import Check
from viz_model.lessons.qkv.variants import _check_head, encode_sentence, traced
from viz_model.model import TinyTransformer
from viz_model.model_text import md_token

LOOKUP_TOL = 1e-5       # float32 rounding of a sum of T products


@dataclass
class Contributor:
    index: int      # key position
    token: str
    weight: float   # softmax weight p_j
    norm: float     # ‖p_j · v_j‖: how much this value adds to the output


@dataclass
class Lookup:
    """One query's lookup. Under shared K = V with RoPE, v is the unrotated k (RoPE turns Q and K only);
    under raw X, q, k and v are the normed input itself (q and k rotated with RoPE)."""

    variant: str
    tokens: list[str]
    layer: int
    head: int
    query: int               # query position (0 = <bos>)
    q: np.ndarray            # (d_k,) the query (after RoPE where used)
    k: np.ndarray            # (T, d_k) every key (after RoPE where used)
    v: np.ndarray            # (T, d_k) every value (never rotated)
    scores: np.ndarray       # (T,) q·k_j / sqrt(d_k), before the mask
    allowed: np.ndarray      # (T,) bool: keys the mask lets this query see
    probs: np.ndarray        # (T,) softmax over the allowed keys (0 elsewhere)
    out: np.ndarray          # (d_k,) Σ_j p_j v_j, recomputed here
    contributors: list[Contributor]  # allowed keys, largest ‖p_j v_j‖ first
    error: float             # max |out − the traced head_out| (the model's own computation)


@torch.no_grad()
def lookup(model: TinyTransformer, tok, text: str, layer: int, head: int, query: int) -> Lookup:
    """Attention as a soft lookup for one query: q against every k, the softmax, and the weighted sum of v's,
    recomputed from the traced q, k, v of `layer`/`head` and compared with the model's own head output."""
    _check_head(model, layer, head)
    ids, tokens = encode_sentence(model, tok, text)
    if not 0 <= query < len(ids):
        raise ValueError(f"choose a query position in 0..{len(ids) - 1}.")
    lt = traced(model, ids).layers[layer]
    q, k, v = lt.q[0, head, query], lt.k[0, head], lt.v[0, head]    # (d_k,), (T, d_k), (T, d_k)
    scores = (k @ q) / math.sqrt(q.shape[-1])                         # (T,)
    allowed = torch.isfinite(lt.mask.expand_as(lt.scores)[0, head, query])  # (T,)
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # (T,)
    parts = probs[:, None] * v                                        # (T, d_k) p_j v_j
    out = parts.sum(0)                                                # (d_k,)
    norms = parts.norm(dim=-1)                                        # (T,)
    order = [int(j) for j in torch.argsort(norms, descending=True) if allowed[j]]
    contributors = [Contributor(j, tokens[j], float(probs[j]), float(norms[j])) for j in order]
    error = float((out - lt.head_out[0, head, query]).abs().max())
    arr = lambda t: t.detach().cpu().numpy()  # noqa: E731
    return Lookup(model.config.qkv, tokens, layer, head, query, arr(q), arr(k), arr(v), arr(scores),
                  arr(allowed), arr(probs), arr(out), contributors, error)


def lookup_check(lk: Lookup) -> Check:
    return Check(lk.error, LOOKUP_TOL, "Σ_j p_j v_j recomputed here equals the model's own head output for this query")


def contributor_rows(lk: Lookup, top_n: int = 5) -> list[dict[str, str]]:
    """The top `top_n` contributors by ‖p_j v_j‖, with their weights and their share of Σ‖p_j v_j‖."""
    total = sum(c.norm for c in lk.contributors) or 1.0
    return [{"key": f"{c.index} · {c.token}", "weight p_j": f"{c.weight:.3f}", "‖p_j · v_j‖": f"{c.norm:.3f}",
             "share of Σ‖p_j · v_j‖": f"{c.norm / total:.0%}"} for c in lk.contributors[:top_n]]


def contributors_text(lk: Lookup) -> str:
    """Whose value the answer mostly is, and the largest weight when that is another key's."""
    first = lk.contributors[0]
    by_weight = max(lk.contributors, key=lambda c: c.weight)
    text = (f"The answer is mostly the value of {md_token(first.token)} (position {first.index}, "
            f"p = {first.weight:.2f}, ‖p·v‖ = {first.norm:.2f})")
    if by_weight.index != first.index:
        text += (f"; {md_token(by_weight.token)} has the largest weight ({by_weight.weight:.2f}) but a shorter value "
                 "vector, so it adds less")
    return text + "."


def lookup_text(token: str) -> str:
    return (f"**Query** = the q of {md_token(token)}; **keys** = the k of every token it may read; the **scores** "
            "q·k_j/√d_k say how well each key matches; the **softmax** turns them into weights p_j that sum to 1.")


# -- what the page says ------------------------------------------------------------------------------------------
VALUES_TEXT = ("**Values**: the answer is the weighted sum Σ_j p_j v_j of the keys' v vectors (rows p_j · v_j, then "
               "their sum).")
