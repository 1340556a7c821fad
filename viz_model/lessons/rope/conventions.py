"""Two layouts of the same rotation: interleaved pairs (2i, 2i+1) and rotate-half pairs (i, i + d/2).
A permutation of W_q's and W_k's rows makes them agree exactly; the wrong one changes scores silently."""

from __future__ import annotations

import pandas as pd
import torch

from viz_model import rope
from viz_model.lessons.common import Check
from viz_model.lessons.rope.rotation import random_qk


def convention_check(d_k: int, t: int, s: int, base: float = 10000.0, seed: int = 0) -> dict:
    """Interleaved vs rotate-half on the same q, k: the permutation makes them agree exactly."""
    q, k = random_qk(d_k, seed)
    theta = rope.default_inv_freq(d_k, base)
    perm = rope.interleaved_to_half_perm(d_k)
    pos_q, pos_k = torch.tensor([float(t)]), torch.tensor([float(s)])

    def rot(x, p, conv):
        return rope.apply_rope(x[None], p, theta, convention=conv)[0]

    inter = float(rot(q, pos_q, "interleaved") @ rot(k, pos_k, "interleaved"))
    half_perm = float(rot(q[perm], pos_q, "half") @ rot(k[perm], pos_k, "half"))
    half_wrong = float(rot(q, pos_q, "half") @ rot(k, pos_k, "half"))
    vec_err = float((rot(q[perm], pos_q, "half") - rot(q, pos_q, "interleaved")[perm]).abs().max())
    return {"perm": perm.tolist(), "interleaved": inter, "half_permuted": half_perm, "half_unpermuted": half_wrong,
            "vector_error": vec_err}


def convention_pairs(d_k: int) -> pd.DataFrame:
    """Which coordinates form pair i under each layout (one row per layout)."""
    return pd.DataFrame({"interleaved": [f"({2 * i}, {2 * i + 1})" for i in range(d_k // 2)],
                         "rotate-half": [f"({i}, {i + d_k // 2})" for i in range(d_k // 2)]},
                        index=[f"pair {i}" for i in range(d_k // 2)]).T


def convention_scores(res: dict) -> dict[str, str]:
    """The three scores of convention_check, by what they are."""
    return {"interleaved score": f"{res['interleaved']:.6f}",
            "rotate-half on P·q, P·k": f"{res['half_permuted']:.6f}",
            "rotate-half, no permutation": f"{res['half_unpermuted']:.6f}"}


def convention_claim(res: dict) -> Check:
    """The permutation makes the layouts agree (res: convention_check)."""
    return Check(max(res["vector_error"], abs(res["interleaved"] - res["half_permuted"])), 1e-12,
                 "half(P·x) = P·interleaved(x), and the scores are identical")


def permutation_sentence(res: dict) -> str:
    return (f"Permutation P = {res['perm']} reorders a vector so that half(P·x) = P·interleaved(x). HF's "
            "weight converter applies P to the rows of W_q and W_k, so scores do not change.")


def wrong_convention_sentence(res: dict) -> str:
    return (f"Using the wrong convention on the same weights changes the score by "
            f"{abs(res['interleaved'] - res['half_unpermuted']):.3f} — silently.")
