"""Scaled dot-product attention that returns its internals, and multi-head attention.

Two paths with the same math (nanoGPT's idea): the traced path materialises every
intermediate for the figures; the fast path calls F.scaled_dot_product_attention.
Self-attention and an encoder-decoder's cross-attention (cross=True: Q from the decoder, K and V from the
encoder output) are one module and share both paths.
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
    bias: torch.Tensor | None = None,
) -> AttentionInternals:
    """softmax(Q K^T * scale + B + M) V with every step kept.  q: (..., Tq, d_k), k/v: (..., Tk, d_k).

    mask is boolean (True = may attend). scale defaults to 1/sqrt(d_k). bias: a position bias added to the scores
    (ALiBi's -m_h |i - j|, broadcastable to them); the scores kept include it.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., Tq, Tk)
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
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
    scores: torch.Tensor    # (B, H, T, Tk)   scaled QK^T (+ the ALiBi bias where used) before the mask
    mask: torch.Tensor      # additive 0 / -inf, broadcastable to (B, H, T, Tk)
    probs: torch.Tensor     # (B, H, T, Tk)   attention weights, rows sum to 1
    head_out: torch.Tensor  # (B, H, T, d_k)  probs @ v
    attn_out: torch.Tensor  # (B, T, d_model) concat(heads) @ W_O
    bias: torch.Tensor | None = None  # (1, H, T, Tk) the ALiBi bias inside `scores`; None without one


class MultiHeadAttention(nn.Module):
    """Multi-head attention with a choice of how Q, K and V are made (config.qkv) and grouped-query heads.

    Parameters per mode: "separate" attn.qkv (one fused Linear for Q|K|V, as before); "shared_qk" attn.qk
    (Q = K) and attn.v; "shared_kv" attn.q and attn.kv (K = V); "none" no projection (Q = K = V = X).
    With n_kv_heads < n_heads, K/V have n_kv_heads heads (the cache keeps that many) and are repeated per group.

    cross=True is cross-attention: attn.q projects the decoder stream, attn.kv (K|V, 2 x d_model) the encoder
    output once per source (memory_kv); forward(..., memory=(k, v)) then attends from every target position to
    every source token (no RoPE, no cache, no causal mask: the mask is the source padding only).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, *, qkv: str = "separate",
                 n_kv_heads: int | None = None, bias: bool = True, out_bias: bool = True, cross: bool = False):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None or cross else n_kv_heads
        self.mode = "cross" if cross else qkv
        d_kv = self.n_kv_heads * self.d_k  # width of K (and of V)
        if cross:
            self.q, self.kv = nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, 2 * d_model, bias=bias)
        elif qkv == "separate":
            self.qkv = nn.Linear(d_model, d_model + 2 * d_kv, bias=bias)
        elif qkv == "shared_qk":  # one W for Q and K: needs as many K heads as Q heads
            self.qk, self.v = nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, d_model, bias=bias)
        elif qkv == "shared_kv":
            self.q, self.kv = nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, d_kv, bias=bias)
        elif qkv != "none":
            raise ValueError(f"qkv must be 'separate', 'shared_qk', 'shared_kv' or 'none', got {qkv!r}.")
        self.out = nn.Linear(d_model, d_model, bias=out_bias)  # W_O
        self.dropout = dropout

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        return x.view(B, T, C // self.d_k, self.d_k).transpose(1, 2)  # (B, heads, T, d_k)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """X (B, T, d_model) -> q (B, H, T, d_k), k and v (B, H_kv, T, d_k), before RoPE and the cache."""
        C = x.shape[-1]
        if self.mode == "separate":
            q, k, v = self.qkv(x).split([C, self.n_kv_heads * self.d_k, self.n_kv_heads * self.d_k], dim=-1)
        elif self.mode == "shared_qk":
            q = k = self.qk(x)  # (B, T, d_model), the same tensor twice
            v = self.v(x)
        elif self.mode == "shared_kv":
            q = self.q(x)
            k = v = self.kv(x)  # (B, T, d_kv)
        elif self.mode == "none":  # the block input itself, split into heads
            q = k = v = x
        else:  # cross: K and V come from the encoder (memory_kv), not from x
            raise ValueError("cross-attention projects Q from x and K, V from the encoder output: use memory_kv.")
        return self.split_heads(q), self.split_heads(k), self.split_heads(v)

    def memory_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention's K and V of the encoder output (B, T_src, d_model): (B, H, T_src, d_k) each, once per
        source."""
        k, v = self.kv(memory).chunk(2, dim=-1)  # (B, T_src, d_model) each
        return self.split_heads(k), self.split_heads(v)

    def expand_kv(self, t: torch.Tensor) -> torch.Tensor:
        """(B, H_kv, Tk, d_k) -> (B, H, Tk, d_k): each K/V head serves n_heads / n_kv_heads query heads
        (Llama's repeat_kv: query heads h and h' share a K/V head when h // group == h' // group)."""
        group = self.n_heads // self.n_kv_heads
        return t if group == 1 else t.repeat_interleave(group, dim=1)

    def forward(
        self,
        x: torch.Tensor,                          # (B, T, d_model)
        *,                                        # the rest by name: attn(x, mask=m, trace=True) reads as it runs
        mask: torch.Tensor | None = None,         # bool, broadcastable to (B, H, T, Tk); None = all
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,  # cos, sin: (T, d_k/2)
        past: tuple[torch.Tensor, torch.Tensor] | None = None,  # cached (k, v), (B, H_kv, Tp, d_k)
        trace: bool = False,
        scale: float | None = None,
        is_causal: bool = False,                  # fast path hint: mask is exactly causal
        memory: tuple[torch.Tensor, torch.Tensor] | None = None,  # cross=True: the encoder's (k, v), memory_kv
        bias: torch.Tensor | None = None,         # ALiBi: (1, H, T, Tk) added to the scores before the softmax
    ) -> tuple[torch.Tensor, LayerTrace | None, tuple[torch.Tensor, torch.Tensor]]:
        B, T, C = x.shape
        if self.mode == "cross":  # q (B, H, T_tgt, d_k) from the decoder; k, v (B, H, T_src, d_k) from the encoder
            if memory is None:
                raise ValueError("cross-attention needs the encoder's K and V (memory=attn.memory_kv(encoder_out)).")
            q, (k, v) = self.split_heads(self.q(x)), memory
        else:
            q, k, v = self._self_qkv(x, rope, past)
        cache = (k, v)  # the cache keeps n_kv_heads heads: grouped-query attention's memory saving
        k, v = self.expand_kv(k), self.expand_kv(v)  # (B, H, Tk, d_k)
        if trace:
            if mask is None and is_causal:
                mask = causal_mask(T, x.device)
            inner = attention(q, k, v, mask, scale, bias)
            head_out = inner.out
        else:
            if bias is not None:  # SDPA adds a float mask to the scores: the bias plus 0 / -inf where blocked
                allowed = causal_mask(T, x.device) if is_causal else mask
                mask = bias.to(q.dtype) if allowed is None else bias.to(q.dtype) + to_additive(allowed, q.dtype)
                is_causal = False
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
            record = LayerTrace(q, k, v, inner.scores, inner.mask, inner.probs, head_out, y, bias)
        return y, record, cache

    def _self_qkv(self, x: torch.Tensor, rope, past) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention's q (B, H, T, d_k) and k, v (B, H_kv, Tk, d_k): projected, rotated, after the cache."""
        q, k, v = self.project(x)  # q (B, H, T, d_k); k, v (B, H_kv, T, d_k)
        if rope is not None:  # Q and K only, per head; never V
            q, k = rotate_interleaved(q, *rope), rotate_interleaved(k, *rope)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, H_kv, Tk, d_k)
        return q, k, v
