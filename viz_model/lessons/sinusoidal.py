"""What the Sinusoidal page proves: the table, binary-counting analogy, shift matrix M_k, similarity (numpy/torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from viz_model.lessons.common import decimate  # noqa: F401  (the sinusoidal lesson's tables use it)
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


def position_bits(n_pos: int, n_bits: int) -> np.ndarray:
    """(n_pos, n_bits) binary digits of each position index, least significant bit first."""
    p = np.arange(n_pos)[:, None]
    return (p >> np.arange(n_bits)[None, :]) & 1


def sin_signs(pe: np.ndarray, n_cols: int) -> np.ndarray:
    """(n_pos, n_cols) 1 where sin(p*w_i) >= 0 else 0, for the first n_cols sin columns (0, 2, 4, ...)."""
    return (pe[:, 0::2][:, :n_cols] >= 0).astype(int)


def shift_check(d: int, k: int, ts: Sequence[int], base: float) -> pd.DataFrame:
    """One M_k for every t: max |M_k P_t - P_{t+k}| per t (all in float64)."""
    ts = [int(t) for t in ts]
    pe = sinusoidal_encoding(max(ts) + k + 1, d, base, dtype=torch.float64)
    M = shift_matrix(d, k, base)
    rows = []
    for t in ts:
        err = float((M @ pe[t] - pe[t + k]).abs().max())
        rows.append({"t": t, "t + k": t + k, "max |M_k·P_t − P_{t+k}|": err})
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
