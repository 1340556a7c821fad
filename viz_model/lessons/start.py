"""The Start page's numbers for any model: what the model is (its card), a head's recorded role, and the check that
the head's attention rows sum to 1. (The English model's measured quality, also on Start, is lessons.english.)"""

from __future__ import annotations

from typing import Any

from viz_model.hf import human_bytes
from viz_model.lessons.common import Check, behaviour_words, roles_measured_on, row_sums
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


def role_line(meta: dict[str, Any] | None, layer: int, head: int, behaviour: dict[str, float | None] | None = None,
              folder: bool = False, first_token: str = "the first token") -> str | None:
    """The head's recorded role, what it was measured on, and (given `behaviour`, from head_behaviour) what it does on
    this sentence; None when no role is recorded for the head."""
    role = next((r for r in (meta or {}).get("head_roles") or [] if (r["layer"], r["head"]) == (layer, head)), None)
    if not role:
        return None
    line = (f"Role of this head, measured {roles_measured_on(meta, folder)}: **{role['role']}** "
            f"(score {role['score']:.2f}).")
    if not behaviour or behaviour["previous-token"] is None:
        return line
    return f"{line} On this sentence: {behaviour_words(role['role'], behaviour, first_token)}."


def row_sum_check(probs, causal: bool) -> Check:
    """The head's softmax rows sum to 1 (probs (T, T)); the sentence says what the grey cells are."""
    note = "grey cells (×) are blocked by the causal mask" if causal else "this model attends in both directions"
    return row_sums(probs, f"Every row sums to 1; {note}")


# -- what the page says --------------------------------------------------------------------------------------------
INTRO = ("See inside a small transformer **while it runs**. Type a sentence: in the heatmap each row is a token, and "
         "its cells say how much that token looks at each token before it (its **attention**). Pick another layer or "
         "head to see another way of looking. Every number here is computed live on the model in the sidebar.")
# (page file, label, icon): where a student goes next from the first screen
NEXT_PAGES = (
    ("app_pages/explorer.py", "Explorer: every head at once, and the steps from Q and K to the weights",
     ":material/grid_on:"),
    ("app_pages/masks.py", "Masks: why a token cannot look ahead", ":material/filter_alt:"),
    ("app_pages/generate.py", "Generate: the model writes, one token at a time", ":material/edit_note:"),
)
