"""Who matches whom: one matrix for Q and K (or raw X) makes the scores symmetric, S = Sᵀ, and a token its
own best match; separate W_Q and W_K break the symmetry. Each variant's score matrix, measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model.lessons.common import Fact
from viz_model.lessons.qkv.variants import _check_head, encode_sentence, label, traced
from viz_model.model import TinyTransformer

SYMMETRY_TOL = 1e-6     # ‖S − Sᵀ‖/‖S‖ at or below this is symmetric (float32 rounding is ~1e-7)


ASYMMETRY_MIN = 0.1     # at or above this is clearly asymmetric (an unrelated random matrix gives about √2)


def asym_text(value: float) -> str:
    """‖S − Sᵀ‖/‖S‖ as every panel title, table cell and caption on the page writes it (one rounding)."""
    return f"{value:.2f}"


def asymmetry(scores: torch.Tensor) -> torch.Tensor:
    """‖S − Sᵀ‖ / ‖S‖ (Frobenius) over the last two dims: (..., T, T) -> (...). 0 exactly when S = Sᵀ."""
    diff = torch.linalg.matrix_norm(scores - scores.transpose(-2, -1))   # (...,)
    return diff / torch.linalg.matrix_norm(scores).clamp_min(1e-30)


def self_attention(probs: torch.Tensor, allowed: torch.Tensor) -> tuple[float, float, float]:
    """(mean diagonal weight, share of rows whose diagonal is the row max, the uniform-attention baseline) over
    (..., T, T) probs, counting only rows that may see more than one key (a causal row 0 sees only itself)."""
    allowed = allowed.expand_as(probs)
    rows = allowed.sum(-1) > 1                                         # (..., T)
    diag = probs.diagonal(dim1=-2, dim2=-1)                            # (..., T)
    is_max = diag >= probs.amax(-1)                                    # (..., T)
    chance = 1.0 / allowed.sum(-1).clamp_min(1)                        # (..., T)
    if not rows.any():
        raise ValueError("every query sees only itself here: use a sentence of at least two words.")
    return float(diag[rows].mean()), float(is_max[rows].float().mean()), float(chance[rows].mean())


@dataclass
class VariantScores:
    variant: str
    tokens: list[str]
    scores: np.ndarray       # (T, T) the head's scaled QKᵀ before the mask
    probs: np.ndarray        # (T, T) after the mask and softmax
    asymmetry: float         # ‖S − Sᵀ‖ / ‖S‖ before the mask
    self_share: float        # mean diagonal weight (rows with more than one visible key)
    diag_max_rate: float     # share of those rows whose largest weight is on the token itself
    chance_share: float      # the self share if each row spread its weight evenly


@torch.no_grad()
def variant_scores(models: Mapping[str, TinyTransformer], tok, text: str, layer: int, head: int,
                   ) -> list[VariantScores]:
    """One head's score matrix per model on the same sentence, with its asymmetry and self-attention."""
    out = []
    for model in models.values():
        _check_head(model, layer, head)
        ids, tokens = encode_sentence(model, tok, text)
        lt = traced(model, ids).layers[layer]
        s, p = lt.scores[0, head], lt.probs[0, head]                  # (T, T)
        allowed = torch.isfinite(lt.mask.expand_as(lt.scores)[0, head])  # (T, T)
        share, rate, chance = self_attention(p, allowed)
        out.append(VariantScores(model.config.qkv, tokens, s.cpu().numpy(), p.cpu().numpy(),
                                 float(asymmetry(s)), share, rate, chance))
    return out


def variant_rows(rows: Sequence[VariantScores]) -> list[dict[str, str]]:
    return [{"variant": label(r.variant), "‖S − Sᵀ‖ / ‖S‖": asym_text(r.asymmetry),
             "mean weight on itself": f"{r.self_share:.3f}", "itself is the largest weight": f"{r.diag_max_rate:.0%}",
             "even spread": f"{r.chance_share:.3f}"} for r in rows]


def symmetry_facts(rows: Sequence[VariantScores]) -> list[Fact]:
    """Shared Q = K and raw X: the head's scores are symmetric (‖S − Sᵀ‖/‖S‖ within SYMMETRY_TOL)."""
    out = []
    for r in rows:
        if r.variant in ("shared_qk", "none"):
            sym = r.asymmetry <= SYMMETRY_TOL
            out.append(Fact(sym, f"{label(r.variant)}: ‖S − Sᵀ‖/‖S‖ = {r.asymmetry:.1e} "
                                 + (f"(≤ {SYMMETRY_TOL:g}), the scores are symmetric: token i matches j exactly as "
                                    "well as j matches i." if sym else
                                    f"(> {SYMMETRY_TOL:g}): the scores are not symmetric here.")))
    return out


def asymmetry_caption(rows: Sequence[VariantScores]) -> str:
    """The separate and K = V variants' asymmetry beside a random matrix's ('' when neither is shown)."""
    asym = [f"{label(r.variant)} {asym_text(r.asymmetry)}" for r in rows if r.variant in ("separate", "shared_kv")]
    if not asym:
        return ""
    return ("With separate W_Q and W_K the matrix is asymmetric (" + ", ".join(asym) + "; an unrelated random matrix "
            "gives about 1.41). The even spread is the weight on itself if a row spread its weight evenly over the "
            "keys it may read.")


# -- what the page says ------------------------------------------------------------------------------------------
SCORES_CAPTION = ("The whole matrix before the causal mask (which later hides everything above the diagonal); red "
                  "positive, blue negative, each panel on its own scale centred at 0. asym = ‖S − Sᵀ‖/‖S‖.")
