"""What the Sinusoidal page proves: the table, binary-counting analogy, shift matrix M_k, similarity (numpy/torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from viz_model.lessons.common import Check, decimate  # noqa: F401  (decimate: the sinusoidal lesson's tables use it)
from viz_model.model import TinyTransformer
from viz_model.positional import MAX_DIM, MAX_POSITIONS, shift_matrix, sinusoidal_encoding


# -- shared ---------------------------------------------------------------------------------------------
def check_table_size(n_pos: int, d: int) -> None:
    if not 1 <= n_pos <= MAX_POSITIONS or not 2 <= d <= MAX_DIM or d % 2:
        raise ValueError(f"choose 1–{MAX_POSITIONS:,} positions and an even dimension between 2 and {MAX_DIM}.")


# -- sinusoidal -----------------------------------------------------------------------------------------
def pe_numpy(n_pos: int, d: int, base: float) -> np.ndarray:
    """The (n_pos, d) sinusoidal table in float64."""
    check_table_size(n_pos, d)
    return sinusoidal_encoding(n_pos, d, base, dtype=torch.float64).numpy()


def read_only_pe(n_pos: int, d: int, base: float) -> np.ndarray:
    """pe_numpy, read-only: one table that many readers share."""
    pe = pe_numpy(n_pos, d, base)
    pe.setflags(write=False)
    return pe


def position_bits(n_pos: int, n_bits: int) -> np.ndarray:
    """(n_pos, n_bits) binary digits of each position index, least significant bit first."""
    p = np.arange(n_pos)[:, None]
    return (p >> np.arange(n_bits)[None, :]) & 1


def sin_signs(pe: np.ndarray, n_cols: int) -> np.ndarray:
    """(n_pos, n_cols) 1 where sin(p*w_i) >= 0 else 0, for the first n_cols sin columns (0, 2, 4, ...)."""
    return (pe[:, 0::2][:, :n_cols] >= 0).astype(int)


SHIFT_ERROR = "max |M_k·P_t − P_{t+k}|"  # shift_check's error column


def shift_check(d: int, k: int, ts: Sequence[int], base: float) -> pd.DataFrame:
    """One M_k for every t: max |M_k P_t - P_{t+k}| per t (all in float64)."""
    ts = [int(t) for t in ts]
    pe = sinusoidal_encoding(max(ts) + k + 1, d, base, dtype=torch.float64)
    M = shift_matrix(d, k, base)
    rows = []
    for t in ts:
        err = float((M @ pe[t] - pe[t + k]).abs().max())
        rows.append({"t": t, "t + k": t + k, SHIFT_ERROR: err})
    return pd.DataFrame(rows)


def dot_by_offset(pe: np.ndarray, t0: int = 0) -> np.ndarray:
    """P_{t0} · P_{t0+k} for k = 0 .. n-1-t0."""
    return pe[t0:] @ pe[t0]


def cosine_similarity(table: np.ndarray) -> np.ndarray:
    """(n, n) cosine similarity of the rows."""
    unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


@torch.no_grad()
def input_vectors(model: TinyTransformer, token_id: int, positions: Sequence[int]) -> dict[str, np.ndarray]:
    """What the first block reads for one token at several positions: emb*sqrt(d) + positional input."""
    emb = model.tok_emb.weight[token_id].double() * math.sqrt(model.config.d_model)  # (d,)
    pos = model.positional_input(torch.tensor(list(positions), device=model.device)).double()  # (P, d)
    out = {"token embedding": emb.cpu().numpy()}
    for i, p in enumerate(positions):
        out[f"position {p} encoding"] = pos[i].cpu().numpy()
    for i, p in enumerate(positions):
        out[f"input at position {p}"] = (emb + pos[i]).cpu().numpy()
    return out


# -- the page's views: what it draws and the claims it checks ------------------------------------------
def default_dims(d: int) -> list[int]:
    """The dimensions the curves open on: the fastest two pairs, one in the middle, the slowest sin."""
    return sorted({j for j in (0, 1, 2, 3, d // 2, d - 2) if j < d})


def d4_view(base: float) -> tuple[np.ndarray, pd.DataFrame, str]:
    """The lecture's d = 4 table of 8 positions, its rows P_0, P_2, P_5, and the sentence on the two pairs' speeds."""
    small = pe_numpy(8, 4, base)
    rows = pd.DataFrame(small[[0, 2, 5]].round(4), index=["P_0", "P_2", "P_5"],
                        columns=["sin p·ω₀", "cos p·ω₀", "sin p·ω₁", "cos p·ω₁"])
    return small, rows, (f"ω = [1, {base ** (-0.5):g}]: the first pair turns one radian per position, the second "
                         f"{base ** (-0.5):g} radians.")


def binary_view(pe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bits of each position of `pe` (n_bits, d) beside the signs of its first (up to 8) sin columns."""
    n = len(pe)
    return position_bits(n, max(1, int(np.ceil(np.log2(n))))), sin_signs(pe, min(8, pe.shape[1] // 2))


def shift_positions(n_pos: int, k: int) -> list[int]:
    """The positions t the shift check runs at: a few small ones, some far ones, and the last one t + k reaches."""
    return sorted({t for t in (0, 1, 2, 7, 50, 300, n_pos - 1 - k) if 0 <= t < n_pos - k} or {0})


def shift_view(d: int, k: int, base: float, ts: Sequence[int]) -> tuple[pd.DataFrame, np.ndarray, str]:
    """shift_check at ts, M_k's first (up to 8) rows and columns, and its title."""
    n_show = min(d, 8)
    title = f"M_{k}: one 2×2 rotation per (sin, cos) pair" + (
        "" if n_show == d else f" (first {n_show} of {d} dimensions)")
    return shift_check(d, k, ts, base), shift_matrix(d, k, base).numpy()[:n_show, :n_show], title


def shift_claim(check: pd.DataFrame, k: int, ts: Sequence[int]) -> Check:
    """One M_k moves every P_t of shift_check's table to P_(t+k)."""
    return Check(float(check.iloc[:, -1].max()), 1e-9, f"M_{k}·P_t = P_(t+{k}) for t ∈ {list(ts)} with one matrix")


def offset_view(pe: np.ndarray, t0: int) -> tuple[np.ndarray, np.ndarray, Check, str]:
    """P_t·P_(t+k) against k from t = 0 and from t = t0, the check that they coincide, and the sentence on its
    largest value."""
    a, b = dot_by_offset(pe, 0), dot_by_offset(pe, t0)
    check = Check(float(np.abs(a[: len(b)] - b).max()), 1e-9,
                  f"P_t·P_(t+k) depends only on k: the curves for t = 0 and t = {t0} coincide")
    return a, b, check, f"The dot product equals Σ cos(k·ω_i): largest at k = 0 ({a[0]:.0f} = d/2), symmetric in ±k."


@dataclass
class SameToken:
    vectors: dict[str, np.ndarray]  # input_vectors of "the" at positions 0 and 2
    dims: np.ndarray                # the dimensions drawn (at most 64)
    title: str
    cosine: float                   # of the two inputs
    check: Check                    # they differ by exactly P_2 - P_0


def same_token_view(model: TinyTransformer, token_id: int) -> SameToken:
    """One token (“the”) at positions 0 and 2: what the first block reads, how alike the two inputs are, and the
    check that they differ by exactly P_2 − P_0."""
    vecs = input_vectors(model, token_id, [0, 2])
    a, b = vecs["input at position 0"], vecs["input at position 2"]
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    d = model.config.d_model
    table = pe_numpy(3, d, 10000.0)
    err = float(np.abs((b - a) - (table[2] - table[0])).max())
    dims = np.arange(min(d, 64))
    return SameToken(vecs, dims, f"“the” at positions 0 and 2 (first {len(dims)} of {d} dims)", cos,
                     Check(err, 1e-5, "the two inputs differ by exactly P_2 − P_0: the token part cancels"))


def same_token_sentence(where: str) -> str:
    return (f"What the first layer of {where} reads for **“the”** at positions 0 and 2: "
            f"its token embedding (×√d_model) plus the position's sinusoid. Same word, different input.")


def learned_view(model: TinyTransformer) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A learned position table (max_len, d), and the cosine similarity of its rows beside the sinusoidal table's."""
    learned = model.pos_emb.weight.detach().double().cpu().numpy()  # (max_len, d)
    return learned, {"learned positions": cosine_similarity(learned),
                     "sinusoidal positions": cosine_similarity(pe_numpy(*learned.shape, 10000.0))}


def learned_sentence(where: str, learned: np.ndarray) -> str:
    n = len(learned)
    return (f"{where.capitalize()} learned one vector per position (rows 0..{n - 1}); it has no row for "
            f"position {n}, so it cannot read longer texts. Cosine similarity of its rows, beside the "
            "sinusoidal table of the same size:")


def gram(pe: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """P·Pᵀ of the positions idx: the dot product of every two position vectors."""
    return pe[idx] @ pe[idx].T


# -- what the page says ---------------------------------------------------------------------------------
NO_SINUSOIDAL_MODEL = ("The shipped “enc-sinusoidal” model is not installed yet (and the sidebar model does not use "
                       "sinusoidal encodings), so this view has no model to read. Pick a sinusoidal model in the "
                       "sidebar.")
NO_LEARNED_MODEL = ("The shipped “enc-learned” model is not installed yet (and the sidebar model does not learn its "
                    "positions), so there is no learned table to compare.")
NO_THE = "This model's vocabulary has no “the”, so this view is skipped."
BINARY_COUNTING = ("**Binary counting.** The lowest bit of a counter flips every step, the next every two steps… "
                   "The sin columns behave alike: fast pairs change sign often, slow pairs rarely — but smoothly.")
ONE_MAP = ("M_k is built from k and ω only — no t appears in it — so a shift by k is one linear map, the same at "
           "every position, which attention can learn.")
