"""Absolute position encodings: the sinusoidal table and its shift matrix M_k.

PE[p, 2i] = sin(p * w_i), PE[p, 2i+1] = cos(p * w_i), w_i = base^(-2i/d)   (Vaswani et al. 3.5)
"""

from __future__ import annotations

import torch

MAX_POSITIONS = 8192
MAX_DIM = 1024


def _check(n_pos: int, d: int) -> None:
    if d < 2 or d % 2:
        raise ValueError(f"the sinusoidal table needs an even dimension >= 2, got {d}.")
    if not 1 <= n_pos <= MAX_POSITIONS:
        raise ValueError(f"number of positions must be between 1 and {MAX_POSITIONS}, got {n_pos}.")
    if d > MAX_DIM:
        raise ValueError(f"dimension must be at most {MAX_DIM}, got {d}.")


def sinusoidal_frequencies(d: int, base: float = 10000.0) -> torch.Tensor:
    """w_i = base^(-2i/d), i = 0..d/2-1.  (d/2,) float64."""
    if base <= 1:
        raise ValueError(f"base must be greater than 1, got {base}.")
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def sinusoidal_encoding(
    n_pos: int, d: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The (n_pos, d) table; sin on even columns, cos on odd. Computed in float64."""
    _check(n_pos, d)
    angles = torch.arange(n_pos, dtype=torch.float64)[:, None] * sinusoidal_frequencies(d, base)  # (P, d/2)
    pe = torch.empty(n_pos, d, dtype=torch.float64)
    pe[:, 0::2] = angles.sin()
    pe[:, 1::2] = angles.cos()
    return pe.to(dtype)


def shift_matrix(d: int, k: float, base: float = 10000.0) -> torch.Tensor:
    """Block-diagonal M_k with PE[t+k] = M_k @ PE[t] for every t.  (d, d) float64.

    Each (sin, cos) pair of frequency w is rotated by [[cos wk, sin wk], [-sin wk, cos wk]];
    nothing in M_k depends on t, which is why the model can learn relative offsets linearly.
    """
    _check(1, d)
    w = sinusoidal_frequencies(d, base) * k  # (d/2,)
    c, s = w.cos(), w.sin()
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (d/2, 2, 2)
    return torch.block_diag(*blocks)


def shift_error(d: int, k: int, ts: list[int] | torch.Tensor, base: float = 10000.0) -> float:
    """max |M_k PE[t] - PE[t+k]| over the given t: the live check of the shift property."""
    ts = torch.as_tensor(ts, dtype=torch.long)
    n = int(ts.max()) + k + 1
    pe = sinusoidal_encoding(n, d, base, dtype=torch.float64)
    shifted = pe[ts] @ shift_matrix(d, k, base).T  # (len(ts), d)
    return float((shifted - pe[ts + k]).abs().max())


# -- ALiBi (Press et al., 2022, "Train Short, Test Long") ------------------------------------------------
# Nothing is added to the input: each head adds -m_h * distance to its attention scores before the softmax.
def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The per-head slopes m_h, (n_heads,) float64.

    n a power of two: the geometric sequence that starts at 2^(-8/n) with that ratio, m_h = 2^(-8(h+1)/n).
    Otherwise the reference code's interpolation (ofirpress/attention_with_linear_biases, get_slopes; Hugging
    Face's build_alibi_tensor computes the same): the slopes of the power of two p just below n, then every other
    slope of 2p (its 1st, 3rd, 5th...) for the n - p heads left.
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"ALiBi needs a whole number of heads >= 1, got {n_heads!r}.")
    p = 1 << (n_heads.bit_length() - 1)  # the largest power of two <= n_heads
    slopes = 2.0 ** (-8.0 / p * torch.arange(1, p + 1, dtype=torch.float64))
    if p == n_heads:
        return slopes
    odd = torch.arange(1, 2 * (n_heads - p), 2, dtype=torch.float64)  # 1, 3, 5, ...: every other slope of 2p
    return torch.cat([slopes, 2.0 ** (-8.0 / (2 * p) * odd)])


def alibi_bias(slopes: torch.Tensor, query_pos: torch.Tensor, key_pos: torch.Tensor) -> torch.Tensor:
    """-m_h * |i - j| for query positions i and key positions j: (H, Tq, Tk), in the slopes' dtype.

    For a causal model every key a query may read has j <= i, so this is the paper's -m_h (i - j). The absolute
    distance also serves an encoder: with (i - j) a key to the right would get a positive bias that grows with
    distance, so the model would be pushed to look far ahead (symmetric ALiBi, as MosaicBERT uses).
    """
    dist = (query_pos[:, None] - key_pos[None, :]).abs().to(slopes.dtype)  # (Tq, Tk)
    return -slopes[:, None, None] * dist + 0.0  # + 0.0: the diagonal reads 0, not -0
