"""The lecture's worked example: "I like cats" split into heads, pair i of row t turned by t·ω_i.
Written out by hand with numpy, and checked against viz_model.rope.apply_rope."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch

from viz_model import rope
from viz_model.lecture import ROPE_HEADS, ROPE_Q
from viz_model.lessons.common import Check

MAX_EDIT_VALUE = 1e6


def parse_matrix(rows, shape: tuple[int, int]) -> np.ndarray:
    """Validate an edited table: every cell a finite number of moderate size."""
    try:
        m = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError("every cell of Q must be a number.") from e
    if m.shape != shape:
        raise ValueError(f"Q must have {shape[0]} rows and {shape[1]} columns.")
    if not np.isfinite(m).all():
        raise ValueError("every cell of Q must be a number (no empty cells).")
    if np.abs(m).max() > MAX_EDIT_VALUE:
        raise ValueError(f"keep the values of Q between −{MAX_EDIT_VALUE:,.0f} and {MAX_EDIT_VALUE:,.0f}.")
    return m


@dataclasses.dataclass
class WorkedExample:
    heads: list[np.ndarray]     # H x (T, d_k) slices of Q_full
    omega: np.ndarray           # (d_k/2,)
    angles: np.ndarray          # (T, d_k/2) t * omega_i
    rotated: list[np.ndarray]   # H x (T, d_k), by the pair formula written out
    core_error: float           # max |formula - viz_model.rope.apply_rope|


def worked_example(q_full: np.ndarray, n_heads: int = ROPE_HEADS, base: float = 10000.0) -> WorkedExample:
    """Split Q (T, d_model) into heads, rotate pair i of each row t by t*omega_i: (a, b) -> (a c - b s, a s + b c)."""
    T, d_model = q_full.shape
    d_k = d_model // n_heads
    omega = rope.default_inv_freq(d_k, base).numpy()
    angles = np.arange(T)[:, None] * omega[None, :]  # (T, d_k/2)
    c, s = np.cos(angles), np.sin(angles)
    heads, rotated, err = [], [], 0.0
    for h in range(n_heads):
        x = q_full[:, h * d_k:(h + 1) * d_k]  # (T, d_k)
        a, b = x[:, 0::2], x[:, 1::2]
        out = np.empty_like(x)
        out[:, 0::2], out[:, 1::2] = a * c - b * s, a * s + b * c
        core = rope.apply_rope(torch.tensor(x), torch.arange(T), torch.tensor(omega)).numpy()
        err = max(err, float(np.abs(out - core).max()))
        heads.append(x)
        rotated.append(out)
    return WorkedExample(heads, omega, angles, rotated, err)


def q_frame() -> pd.DataFrame:
    """The lecture's Q_full for “I like cats”, one row per token, as the page's editable table."""
    return pd.DataFrame(ROPE_Q, columns=[f"q{j}" for j in range(8)],
                        index=[f"{t} {w}" for t, w in enumerate(["I", "like", "cats"])])


def worked_tables(ex: WorkedExample, index) -> dict[str, pd.DataFrame]:
    """The worked example's tables, rows named by `index`: each head's slice, the angles, head 0 rotated."""
    pairs = ["pair 0 · a", "pair 0 · b", "pair 1 · a", "pair 1 · b"]
    out = {f"head {h}": pd.DataFrame(x, index=index, columns=pairs) for h, x in enumerate(ex.heads)}
    out["angles"] = pd.DataFrame(ex.angles, index=index, columns=["t·ω₀ (rad)", "t·ω₁ (rad)"])
    out["rotated"] = pd.DataFrame(ex.rotated[0].round(6), index=index, columns=["a′₀", "b′₀", "a′₁", "b′₁"])
    return out


def worked_arrows(ex: WorkedExample, index) -> dict[str, tuple[float, float]]:
    """Pair 0 of head 0 for each token (rows named by `index`), before and after its turn by t·ω₀: the arrows of
    figures.rope.pair_arrows."""
    out = {}
    for t, name in enumerate(index):
        out[f"q {name} before rotation"] = tuple(float(v) for v in ex.heads[0][t, :2])
        out[f"q {name} at t = {t}"] = tuple(float(v) for v in ex.rotated[0][t, :2])
    return out


def head_columns(h: int) -> str:
    return (f"Head {h}: columns {4 * h}–{4 * h + 3} of Q_full; pairs (q{4 * h}, q{4 * h + 1}) and "
            f"(q{4 * h + 2}, q{4 * h + 3})")


def omega_sentence(ex: WorkedExample) -> str:
    return (f"Frequencies ω_i = 10000^(−2i/4) = **[{ex.omega[0]:g}, {ex.omega[1]:g}]**. Row t turns pair i by "
            "t·ω_i radians: (a, b) → (a·cos − b·sin, a·sin + b·cos).")


def worked_claim(ex: WorkedExample) -> Check:
    return Check(ex.core_error, 1e-12, "the pair formula written out above equals viz_model.rope.apply_rope")
