"""Attention masks. Convention: a boolean mask is True where a query MAY attend to a key.

Shapes: an attention mask is (T_q, T_k) or broadcastable to (B, H, T_q, T_k);
a key padding mask is (B, T) with True for real tokens.
"""

from __future__ import annotations

import torch


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower triangle: query t sees keys 0..t.  (T, T) bool."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def bidirectional_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Every query sees every key.  (T, T) bool."""
    return torch.ones(T, T, dtype=torch.bool, device=device)


def sliding_window_mask(
    T: int, window: int, causal: bool = True, device: torch.device | str | None = None
) -> torch.Tensor:
    """Query t sees keys within `window` positions (t-window+1..t if causal, |t-s| < window otherwise)."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}.")
    idx = torch.arange(T, device=device)
    offset = idx[:, None] - idx[None, :]  # (T, T): query - key
    near = offset.abs() < window
    return near & (offset >= 0) if causal else near


def prefix_lm_mask(T: int, prefix_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Prefix-LM: the first `prefix_len` tokens see each other fully; the rest is causal."""
    if not 0 <= prefix_len <= T:
        raise ValueError(f"prefix length must be between 0 and {T}, got {prefix_len}.")
    mask = causal_mask(T, device)
    mask[:prefix_len, :prefix_len] = True
    return mask


def custom_mask(cells, T: int | None = None) -> torch.Tensor:
    """A user-edited mask from nested lists / array of 0/1 or bools.  (T, T) bool."""
    mask = torch.as_tensor(cells).bool()
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(f"a custom mask must be square (T x T), got shape {tuple(mask.shape)}.")
    if T is not None and mask.shape[0] != T:
        raise ValueError(f"the custom mask is {mask.shape[0]}x{mask.shape[0]} but the text has {T} tokens.")
    return mask


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, T) bool, True for real tokens, False for padding."""
    return ids != pad_id


def combine(attn_mask: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Merge a (T, T) attention mask with a (B, T) key padding mask into (B or 1, 1, T, T).

    A query row that would see no key at all (e.g. a padded query under a left-padded
    causal mask) is allowed to see itself, so its softmax row is defined; real rows are untouched.
    """
    mask = attn_mask[None, None]  # (1, 1, T, T)
    if key_padding_mask is not None:
        mask = mask & key_padding_mask[:, None, None, :]  # (B, 1, T, T)
    empty_row = ~mask.any(-1, keepdim=True)
    if empty_row.any():
        Tq, Tk = mask.shape[-2:]
        keys = torch.arange(Tk, device=mask.device)
        own = (torch.arange(Tq, device=mask.device) + Tk - Tq)[:, None] == keys[None, :]  # (Tq, Tk)
        mask = mask | (empty_row & own)
    return mask


def to_additive(bool_mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """0 where allowed, -inf where blocked: added to scores so blocked keys get exactly 0 weight."""
    zeros = torch.zeros(bool_mask.shape, dtype=dtype, device=bool_mask.device)
    return zeros.masked_fill(~bool_mask, float("-inf"))


def from_additive(additive: torch.Tensor) -> torch.Tensor:
    """Back to bool: True where the additive mask is finite."""
    return torch.isfinite(additive)


MASK_KINDS = ("causal", "bidirectional", "sliding_window", "prefix_lm", "custom")


def build_mask(kind: str, T: int, *, window: int = 3, prefix_len: int = 2, cells=None,
               device: torch.device | str | None = None) -> torch.Tensor:
    """One entry point for the mask gallery: (T, T) bool for a named kind."""
    if kind == "causal":
        return causal_mask(T, device)
    if kind == "bidirectional":
        return bidirectional_mask(T, device)
    if kind == "sliding_window":
        return sliding_window_mask(T, window, causal=True, device=device)
    if kind == "prefix_lm":
        return prefix_lm_mask(T, min(prefix_len, T), device)
    if kind == "custom":
        if cells is None:
            raise ValueError("a custom mask needs its cells.")
        return custom_mask(cells, T).to(device)
    raise ValueError(f"unknown mask kind {kind!r}; choose one of {MASK_KINDS}.")
