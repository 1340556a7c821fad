"""The Start page's numbers for any model: what the model is (its card), a head's recorded role, and the check that
the head's attention rows sum to 1. (The English model's measured quality, also on Start, is lessons.english.)"""

from __future__ import annotations

from typing import Any

import numpy as np

from viz_model.hf import human_bytes
from viz_model.lessons.common import ROW_SUM_TOL, Check
from viz_model.model import TinyTransformer


def model_card(model: TinyTransformer, meta: dict[str, Any], device: str, folder: bool) -> dict[str, str]:
    """What the model is, one value per row of the Start page's card (a model folder's also: K/V heads, dtype,
    memory, norm, MLP, RoPE theta and scaling)."""
    cfg = model.config
    attention = "causal (decoder)" if cfg.causal else "bidirectional (encoder)"
    if not folder:
        return {"parameters": f"{model.num_params():,}", "layers": str(cfg.n_layers),
                "heads per layer": str(cfg.n_heads), "d_model (d_k per head)": f"{cfg.d_model} ({cfg.d_k})",
                "context length": str(cfg.max_len), "position encoding": cfg.pos_encoding,
                "attention": attention, "device": device}
    position = cfg.pos_encoding
    if cfg.pos_encoding == "rope":
        scaling = cfg.rope_scaling
        position = f"RoPE, θ = {cfg.rope_base:,.0f}" + (
            f", {scaling['type']} scaling ×{scaling['factor']:g}" if scaling else "")
    kv = str(cfg.kv_heads) + (f" (grouped-query: {cfg.n_heads // cfg.kv_heads} query heads share each)"
                              if cfg.kv_heads != cfg.n_heads else " (one per query head)")
    return {"model": f"{meta.get('name')} ({meta.get('architecture') or meta.get('model_type')})",
            "parameters": f"{meta.get('n_params', model.num_params()):,}", "layers": str(cfg.n_layers),
            "heads per layer": str(cfg.n_heads), "K/V heads": kv,
            "d_model (d_k per head)": f"{cfg.d_model} ({cfg.d_k})", "context length": f"{cfg.max_len:,}",
            "position encoding": position, "norm · MLP": f"{cfg.norm} · {cfg.mlp}",
            "dtype": str(meta.get("dtype")), "memory": human_bytes(int(meta.get("memory_bytes") or 0)),
            "attention": attention, "device": device}


def role_line(meta: dict[str, Any] | None, layer: int, head: int) -> str | None:
    """The head's role as measured when the model was built (None: no role recorded for it)."""
    role = next((r for r in (meta or {}).get("head_roles") or [] if (r["layer"], r["head"]) == (layer, head)), None)
    if not role:
        return None
    return f"Measured role of this head on held-out text: **{role['role']}** (score {role['score']:.2f})."


def row_sum_check(probs, causal: bool) -> Check:
    """The head's softmax rows sum to 1 (probs (T, T)); the sentence says what the grey cells are."""
    note = "grey cells (×) are blocked by the causal mask" if causal else "this model attends in both directions"
    err = float(np.abs(probs.sum(-1) - 1).max())  # summed in the weights' own float32, as the model's softmax is
    return Check(err, ROW_SUM_TOL, f"Every row sums to 1; {note}")
