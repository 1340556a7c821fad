"""Where RoPE acts: on Q and K per head, after the projection, never on V or the residual stream.
Checked on a model's own trace against the same weights with RoPE switched off."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.lessons.common import Check
from viz_model.lessons.rope.length import scaled_copy
from viz_model.model import TinyTransformer


@torch.no_grad()
def rope_on_off(model: TinyTransformer, ids: Sequence[int]) -> tuple:
    """Traces of the same weights with RoPE on and with pos_encoding='none' (RoPE switched off)."""
    x = torch.tensor([list(ids)], device=model.device)
    off = scaled_copy(model, pos_encoding="none", rope_scaling=None)
    return model(x, trace=True).trace, off(x, trace=True).trace


def own_rope_sentence(cfg: ModelConfig) -> str:
    """A model folder's own RoPE settings, and grouped-query attention when it has it."""
    sc, H = cfg.rope_scaling, cfg.n_heads
    return f"With its own rope_theta = {cfg.rope_base:,.0f}" + (
        f" and {rope.SCALINGS[sc['type']].label} scaling ×{sc['factor']:g}" if sc else "") + (
        f"; K and V have {cfg.kv_heads} heads, repeated for the {H} query heads (grouped-query attention)"
        if cfg.kv_heads != H else "") + "."


def where_rows(cfg: ModelConfig, on) -> pd.DataFrame:
    """The shapes of one attention layer, step by step, and where RoPE acts (on: the trace with RoPE on)."""
    T, H, d_k = on.layers[0].q.shape[2], cfg.n_heads, cfg.d_k
    return pd.DataFrame([
        ("x (after LayerNorm)", f"(1, {T}, {cfg.d_model})", "no RoPE: the residual stream is never rotated"),
        ("Q, K, V = split(x·W_qkv) into heads", f"(1, {H}, {T}, {d_k})", "projection first"),
        ("cos, sin tables", f"({T}, {d_k // 2})", "one angle per position and pair"),
        ("Q′ = R·Q, K′ = R·K", f"{tuple(on.layers[0].q.shape)}", "per head, on d_k"),
        ("V", f"{tuple(on.layers[0].v.shape)}", "untouched"),
    ], columns=["step", "shape", "note"])


def where_claims(cfg: ModelConfig, on, off) -> list[Check]:
    """Layer 0's Q with RoPE is RoPE applied to Q without it; V is the same either way (traces of rope_on_off)."""
    T = on.layers[0].q.shape[2]
    theta, att = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=T)
    q_rot = rope.apply_rope(off.layers[0].q.double(), torch.arange(T), theta, att)
    q_err = float((q_rot - on.layers[0].q).abs().max())
    v_err = float((on.layers[0].v - off.layers[0].v).abs().max())
    return [Check(q_err, 1e-4, "layer 0: Q with RoPE = RoPE applied per head to Q without it"),
            Check(v_err, 0.0, "V is identical with RoPE on and off: it is never rotated")]


def head_on_off(on, off, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """One head's attention with RoPE on and off (T, T), where it may attend, and the largest change."""
    p_on, p_off = on.layers[layer].probs[0, head], off.layers[layer].probs[0, head]
    allowed = torch.isfinite(on.layers[layer].mask).expand(on.layers[layer].probs.shape)[0, head]
    return p_on, p_off, allowed, float((p_on - p_off).abs().max())
