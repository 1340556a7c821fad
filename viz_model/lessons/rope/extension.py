"""Context extension: each scaling of rope.SCALINGS changes θ_i (and maybe an attention factor) so that
positions up to L′ turn through angles training at L produced; the panel's settings, views and checks."""

from __future__ import annotations

import math
from collections.abc import MutableMapping

import numpy as np

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.lessons.common import Check

L_MAX, LP_MAX = 131072, 1048576  # the context-extension panel's largest training length L and target length L′


def seed_panel(state: MutableMapping, model: dict | None, name: str, keys: dict[str, str], marker_key: str) -> None:
    """Open the context-extension panel on a model folder's own settings (`model`: field -> value, `name` the folder;
    `keys`: field -> its widget key in `state`, the session's); going back to one of the app's models restores the
    panel's defaults. A link's values win on the first visit. `marker_key` keeps which model it was last seeded with."""
    marker = name if model is not None else None
    before = state.get(marker_key, "unset")
    if before == marker:
        return
    state[marker_key] = marker
    for field, key in keys.items():
        if model is None:
            if before not in ("unset", None):
                state.pop(key, None)
        elif field in model and (before != "unset" or key not in state):
            state[key] = model[field]


def panel_defaults(cfg: ModelConfig) -> dict:
    """The context-extension panel's opening settings for the sidebar's model: L its context when it uses RoPE (else
    4,096), L′ eight times L, d_k 128, base 10,000 (class mode's RoPE question reads the same)."""
    default_len = cfg.max_len if cfg.pos_encoding == "rope" else 4096
    return {"d_k": 128, "base": 10000.0, "L": min(default_len, L_MAX), "Lp": min(8 * default_len, LP_MAX)}


def scaling_for(method: str, factor: float, original_len: int, extra: dict | None = None) -> dict | None:
    """The HF-style rope_scaling dict for one registry entry; validated (ValueError with a sentence)."""
    row = rope.scaling_row(method)
    if not row.params:
        return None
    spec = {"factor": float(factor), "original_max_position_embeddings": int(original_len), **(extra or {})}
    return rope.validate_scaling({"type": method, **{k: v for k, v in spec.items() if k in row.params}})


def scaling_problems(original_len: int, target_len: int, extra: dict | None = None) -> dict[str, str]:
    """method -> why its parameters are invalid, for the methods that cannot run with these settings."""
    problems = {}
    for method in rope.SCALINGS:
        try:
            scaling_for(method, target_len / original_len, original_len, extra)
        except ValueError as err:
            problems[method] = str(err)
    return problems


def scaling_table(d_k: int, base: float, original_len: int, target_len: int, extra: dict | None = None
                  ) -> dict[str, tuple[np.ndarray, float]]:
    """method -> (theta'/theta per pair, attention factor) at the target length, for every registry entry whose
    parameters are valid (scaling_problems names the others): one bad method's parameters hide no other method."""
    factor = target_len / original_len
    theta = rope.default_inv_freq(d_k, base)
    out = {}
    for method in rope.SCALINGS:
        try:
            scaling = scaling_for(method, factor, original_len, extra)
        except ValueError:
            continue
        freqs, att = rope.inv_freq(d_k, base, scaling, seq_len=target_len)
        out[method] = ((freqs / theta).numpy(), att)
    return out


def angle_coverage(theta: np.ndarray, theta_new: np.ndarray, train_len: int, target_len: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: angle swept over the training span and over the target span, both capped at one full turn.

    Spans (L and L′ positions) rather than last indices, so that linear interpolation by s = L′/L maps the
    target span exactly onto the training one.
    """
    seen = np.minimum(train_len * theta, 2 * math.pi)
    needed = np.minimum(target_len * theta_new, 2 * math.pi)
    return seen, needed


def readouts(d_k: int, base: float, factor: float, original_len: int, target_len: int) -> dict[str, str]:
    """The numbers the lecture quotes, for the current settings."""
    out = {"factor s = L′/L": f"{factor:g}",
           "NTK-aware base′ = b·s^(d/(d−2))": f"{rope.ntk_base(d_k, base, factor):,.1f}",
           "dynamic NTK base′ at L′ (HF)": f"{rope.dynamic_base(d_k, base, factor, original_len, target_len):,.0f}",
           "YaRN temperature √(1/t) = 0.1 ln s + 1": f"{rope.yarn_mscale(factor):.4f}",
           "YaRN logit multiplier (√(1/t))²": f"{rope.yarn_mscale(factor) ** 2:.4f}"}
    if factor > 1:
        low, high = rope.yarn_range(d_k, base, {"original_max_position_embeddings": original_len})
        out["YaRN ramp (low, high) pair"] = f"({low:g}, {high:g})"
    return out


PANEL_BASES = [100.0, 1000.0, 10000.0, 100000.0, 500000.0, 1000000.0]  # 500,000: Llama 3's rope_theta


PANEL_D_KS = [8, 16, 32, 64, 128, 256]


def panel_choices(own: dict | None) -> tuple[list[int], list[float]]:
    """The d_k and base values the context-extension panel offers: the usual ones, plus a model's own (own:
    model_extension of it, or None)."""
    return (sorted({*PANEL_D_KS, *([own["d_k"]] if own else [])}),
            sorted({*PANEL_BASES, *([own["base"]] if own else [])}))


SCALING_PARAMS = tuple(rope.panel_params())  # the panel's optional parameters (YaRN's and Llama 3's)


def model_extension(cfg: ModelConfig) -> dict:
    """The context-extension panel's settings that describe a RoPE model: its d_k and rope_theta, the length its
    scaling was set up from (L) and the length it reaches (L′ = factor × L), its method and parameters."""
    sc = dict(cfg.rope_scaling or {})
    method, factor = sc.pop("type", "none"), float(sc.pop("factor", 1.0))
    original = int(sc.pop("original_max_position_embeddings", 0)) or round(cfg.max_len / factor)
    out = {"d_k": cfg.d_k, "base": float(cfg.rope_base), "L": min(max(16, original), L_MAX), "method": method}
    out["Lp"] = min(max(out["L"], round(factor * out["L"])) if method != "none" else 8 * out["L"], LP_MAX)
    out.update({k: float(v) for k, v in sc.items() if k in SCALING_PARAMS})
    return out


def own_settings_sentence(cfg: ModelConfig) -> str:
    """What the context-extension panel opened on, for a model folder with RoPE."""
    own = model_extension(cfg)
    return (f"Opened on the sidebar model's own RoPE: d_k = {own['d_k']}, rope_theta = {own['base']:,.0f}, "
            + (f"{rope.SCALINGS[own['method']].label} scaling from L = {own['L']:,} to L′ = "
               f"{own['Lp']:,} (its config.json)." if cfg.rope_scaling else "no scaling (plain RoPE)."))


def short_target(L: int, Lp: int) -> str | None:
    """The sentence that stops the panel when the target length is below the training length."""
    if Lp >= L:
        return None
    return (f"The target length L′ = {Lp:,} is shorter than the training length L = {L:,}: there is "
            "nothing to extend. Choose L′ ≥ L.")


def coverage_view(d_k: int, base: float, method: str, ratio: np.ndarray, att: float, L: int, Lp: int
                  ) -> tuple[np.ndarray, np.ndarray, str]:
    """angle_coverage of one method (theta'/theta = ratio, attention factor att), and the sentence that counts the
    pairs reaching angles at L′ that training never produced."""
    theta = rope.default_inv_freq(d_k, base).numpy()
    seen, needed = angle_coverage(theta, theta * ratio, L, Lp)
    n_out = int((needed > seen + 1e-9).sum())
    label = rope.SCALINGS[method].label
    return seen, needed, (
        f"With {label}, {n_out} of {d_k // 2} pairs reach angles at L′ = {Lp:,} that training "
        f"never produced (red). Attention factor {att:.4f}: cos and sin are multiplied by it, so every "
        f"logit is multiplied by its square, {att ** 2:.4f}.")


def own_claim(cfg: ModelConfig, settings: dict, ratio: np.ndarray, att: float) -> Check | None:
    """The panel's method at these settings (theta'/theta = ratio, attention factor att) gives the model's own RoPE
    frequencies and attention factor (rope.inv_freq of its config); None while the panel is on other settings."""
    own = model_extension(cfg)
    if any(settings.get(k) != v for k, v in own.items()):
        return None
    theirs, their_att = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=own["Lp"])
    ours = rope.default_inv_freq(cfg.d_k, cfg.rope_base).numpy() * ratio
    err = float(np.abs(ours - theirs.numpy()).max() / theirs.numpy().max()) + abs(att - their_att)
    s = own["Lp"] / own["L"]
    return Check(err, 1e-9, f"{rope.SCALINGS[own['method']].label} at s = L′/L = {s:g} gives this model's own "
                            f"RoPE frequencies and attention factor (rope_theta {cfg.rope_base:,.0f} and the scaling "
                            "in its config.json)")


def ntk_note() -> str:
    """The lecture notes' NTK-aware base for s = 8, d_k = 128, against the formula's own value."""
    lecture = rope.ntk_base(128, 10000.0, 8)
    return (f"A note on the lecture notes: for s = 8 and d_k = 128 they give the NTK-aware base as ≈ 500,000. "
            f"The formula b·s^(d/(d−2)) gives 10,000 · 8^(128/126) = **{lecture:,.1f}** (≈ 82,685). "
            f"500,000 is Llama 3's pre-training base; this formula would reach it only at "
            f"s ≈ {(500000 / 10000) ** (126 / 128):.1f}.")
