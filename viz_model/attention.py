"""Scaled dot-product attention that returns its internals, and multi-head attention.

Two paths with the same math (nanoGPT's idea): the traced path materialises every
intermediate for the figures; the fast path calls F.scaled_dot_product_attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.masks import causal_mask, to_additive
from viz_model.rope import rotate_interleaved


@dataclass
class AttentionInternals:
    scores: torch.Tensor  # (B, H, Tq, Tk)  scaled QK^T, before the mask
    mask: torch.Tensor    # additive (0 / -inf), broadcastable to scores
    probs: torch.Tensor   # (B, H, Tq, Tk)  softmax rows
    out: torch.Tensor     # (B, H, Tq, d_k) probs @ v


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> AttentionInternals:
    """softmax(Q K^T * scale + M) V with every step kept.  q: (..., Tq, d_k), k/v: (..., Tk, d_k).

    mask is boolean (True = may attend). scale defaults to 1/sqrt(d_k).
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., Tq, Tk)
    if mask is None:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device)
    additive = to_additive(mask, scores.dtype)
    probs = torch.softmax(scores + additive, dim=-1)
    return AttentionInternals(scores=scores, mask=additive, probs=probs, out=probs @ v)


@dataclass
class LayerTrace:
    q: torch.Tensor         # (B, H, T, d_k)  after RoPE where used
    k: torch.Tensor         # (B, H, Tk, d_k) after RoPE where used
    v: torch.Tensor         # (B, H, Tk, d_k)
    scores: torch.Tensor    # (B, H, T, Tk)   scaled QK^T before the mask
    mask: torch.Tensor      # additive 0 / -inf, broadcastable to (B, H, T, Tk)
    probs: torch.Tensor     # (B, H, T, Tk)   attention weights, rows sum to 1
    head_out: torch.Tensor  # (B, H, T, d_k)  probs @ v
    attn_out: torch.Tensor  # (B, T, d_model) concat(heads) @ W_O


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)  # W_O
        self.dropout = dropout

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, T, d_k)

    def forward(
        self,
        x: torch.Tensor,                          # (B, T, d_model)
        mask: torch.Tensor | None,                # bool, broadcastable to (B, H, T, Tk); None = all
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,  # cos, sin: (T, d_k/2)
        past: tuple[torch.Tensor, torch.Tensor] | None = None,  # cached (k, v), (B, H, Tp, d_k)
        trace: bool = False,
        scale: float | None = None,
        is_causal: bool = False,                  # fast path hint: mask is exactly causal
    ) -> tuple[torch.Tensor, LayerTrace | None, tuple[torch.Tensor, torch.Tensor]]:
        B, T, C = x.shape
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split(C, dim=-1))  # each (B, H, T, d_k)
        if rope is not None:  # Q and K only, per head; never V
            q, k = rotate_interleaved(q, *rope), rotate_interleaved(k, *rope)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, H, Tk, d_k)
        if trace:
            if mask is None and is_causal:
                mask = causal_mask(T, x.device)
            inner = attention(q, k, v, mask, scale)
            head_out = inner.out
        else:
            head_out = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=None if is_causal else mask,
                dropout_p=self.dropout if self.training else 0.0,
                is_causal=is_causal,
                scale=scale,
            )
        y = self.out(head_out.transpose(1, 2).reshape(B, T, C))  # concat heads, then W_O
        record = None
        if trace:
            record = LayerTrace(q, k, v, inner.scores, inner.mask, inner.probs, head_out, y)
        return y, record, (k, v)
