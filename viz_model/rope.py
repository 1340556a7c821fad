"""Rotary position embeddings (RoPE) and their context-extension scalings.

Pair i of a head vector is (x[2i], x[2i+1]) (interleaved, RoFormer / Meta convention); at position m
it is rotated by m * theta_i, theta_i = base^(-2i/d_k). Because R_t^T R_s = R_(s-t),
<R_t q, R_s k> = <q, R_(s-t) k>: scores depend only on the offset s - t.

Scalings follow HF transformers' modeling_rope_utils: one table, SCALINGS, a row per type (its pure
function, label, parameters and their ranges, HF name); each function returns (inv_freq,
attention_factor). attention_factor multiplies cos AND sin, so attention logits are multiplied by
attention_factor**2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

# ---------------------------------------------------------------------------------------------
# frequencies
# ---------------------------------------------------------------------------------------------


def default_inv_freq(d_k: int, base: float = 10000.0) -> torch.Tensor:
    """theta_i = base^(-2i/d_k), i = 0..d_k/2-1.  (d_k/2,) float64."""
    if d_k < 2 or d_k % 2:
        raise ValueError(f"RoPE needs an even head dimension d_k >= 2, got {d_k}.")
    if not base > 1:
        raise ValueError(f"RoPE base must be greater than 1, got {base}.")
    return 1.0 / (base ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))


def _none(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return default_inv_freq(d_k, base), 1.0


def _linear(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """Position Interpolation: rotate position m as if it were m/s  <=>  theta_i / s."""
    return default_inv_freq(d_k, base) / scaling["factor"], 1.0


def ntk_base(d_k: int, base: float, factor: float) -> float:
    """NTK-aware base change b' = b * s^(d/(d-2)): keeps theta_0, divides the slowest pair by s."""
    return base * factor ** (d_k / (d_k - 2))


def _ntk(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return default_inv_freq(d_k, ntk_base(d_k, base, scaling["factor"])), 1.0


def dynamic_base(d_k: int, base: float, factor: float, original_max_pos: int, seq_len: int | None) -> float:
    """HF _compute_dynamic_ntk_parameters: b' = b (f*L'/L - (f-1))^(d/(d-2)), L' = max(seq_len, L)."""
    seq_len = max(seq_len or original_max_pos, original_max_pos)
    alpha = factor * seq_len / original_max_pos - (factor - 1)
    return base * alpha ** (d_k / (d_k - 2))


def _dynamic(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    b = dynamic_base(d_k, base, scaling["factor"], scaling["original_max_position_embeddings"], seq_len)
    return default_inv_freq(d_k, b), 1.0


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """sqrt(1/t) = 0.1 ln(s) + 1 (YaRN eq. 22, with the Errata's correction)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_correction_dim(num_rotations: float, d_k: int, base: float, original_max_pos: int) -> float:
    """Pair index at which the original context holds `num_rotations` full turns."""
    return d_k * math.log(original_max_pos / (num_rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_range(d_k: int, base: float, scaling: dict) -> tuple[float, float]:
    """(low, high) pair indices of YaRN's ramp, as in HF (floor/ceil when truncate)."""
    L = scaling["original_max_position_embeddings"]
    low = yarn_correction_dim(scaling.get("beta_fast", 32.0), d_k, base, L)
    high = yarn_correction_dim(scaling.get("beta_slow", 1.0), d_k, base, L)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_k - 1)
    if low == high:
        high += 0.001  # avoid a zero-width ramp
    return low, high


def yarn_ramp(d_k: int, base: float, scaling: dict) -> torch.Tensor:
    """Ramp over the PAIR INDEX (as in the code checkpoints were trained with), 0 = keep theta, 1 = theta/s."""
    low, high = yarn_range(d_k, base, scaling)
    i = torch.arange(d_k // 2, dtype=torch.float64)
    return ((i - low) / (high - low)).clamp(0, 1)


def _yarn(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    s = scaling["factor"]
    att = scaling.get("attention_factor")
    if att is None:
        ms, ms_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        att = yarn_mscale(s, ms) / yarn_mscale(s, ms_all) if ms and ms_all else yarn_mscale(s)
    theta = default_inv_freq(d_k, base)
    ramp = yarn_ramp(d_k, base, scaling)
    return theta / s * ramp + theta * (1 - ramp), float(att)


def _llama3(d_k: int, base: float, scaling: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """Llama 3.1: keep short wavelengths, divide long ones by s, blend smoothly in between."""
    s = scaling["factor"]
    lo, hi = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    L = scaling["original_max_position_embeddings"]
    theta = default_inv_freq(d_k, base)
    wavelen = 2 * math.pi / theta
    out = torch.where(wavelen > L / lo, theta / s, theta)
    smooth = (L / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * out / s + smooth * out
    medium = ~(wavelen < L / hi) & ~(wavelen > L / lo)
    return torch.where(medium, smoothed, out), 1.0


ScalingFn = Callable[[int, float, dict, "int | None"], "tuple[torch.Tensor, float]"]


@dataclass(frozen=True)
class Param:
    """One scaling parameter: required or its default, its lower bound (and whether the bound itself is allowed),
    its kind ("number", "whole" or "flag") and, for the RoPE page's panel, the largest value it offers (None: the
    panel does not offer it)."""
    required: bool = False
    default: Any = None
    lower: float = 0.0
    inclusive: bool = True
    kind: str = "number"
    panel_top: float | None = None


FACTOR = Param(required=True, lower=1.0)
ORIGINAL_LEN = Param(required=True, lower=1, kind="whole")  # original_max_position_embeddings


def _hf_as_is(params: dict, hf: Mapping[str, Any], max_pos: int) -> dict:
    return params


def _hf_dynamic(params: dict, hf: Mapping[str, Any], max_pos: int) -> dict:
    """transformers' dynamic NTK grows from max_position_embeddings, whatever else is set."""
    return {**params, "original_max_position_embeddings": max_pos}


def _hf_original(params: dict, hf: Mapping[str, Any], max_pos: int) -> dict:
    """A top-level original_max_position_embeddings wins (Phi-3's layout), then the scaling's own, then the context."""
    original = hf.get("original_max_position_embeddings") or params.get("original_max_position_embeddings") or max_pos
    return {**params, "original_max_position_embeddings": original}


def _hf_yarn(params: dict, hf: Mapping[str, Any], max_pos: int) -> dict:
    """YaRN's factor defaults to context / original, and transformers reads the betas as `value or default`."""
    params = _hf_original(params, hf, max_pos)
    params.setdefault("factor", max_pos / params["original_max_position_embeddings"])
    return {k: v for k, v in params.items() if k not in ("beta_fast", "beta_slow") or v}


@dataclass(frozen=True)
class Scaling:
    """One RoPE scaling: everything about it (HF transformers' ROPE_INIT_FUNCTIONS pattern, one row per type).

    init: (d_k, base, scaling dict, seq_len) -> (inv_freq, attention_factor). params: name -> Param, in order.
    by_length: recomputed from the current length (the model cannot keep one cos/sin table). hf_name: the
    rope_type in a transformers config.json (None: transformers has no such type); from_hf completes its parameters
    from that config (params, the config, its max_position_embeddings)."""
    name: str
    label: str
    init: ScalingFn
    params: Mapping[str, Param] = field(default_factory=dict)
    by_length: bool = False
    hf_name: str | None = None
    from_hf: Callable[[dict, Mapping[str, Any], int], dict] = _hf_as_is


# Zero is never a valid beta, low_freq_factor or attention_factor: it divides by zero (yarn_correction_dim's log,
# Llama 3's L / low_freq_factor) or zeroes every q and k.
SCALINGS: dict[str, Scaling] = {s.name: s for s in (
    Scaling("none", "none (plain RoPE)", _none, hf_name="default"),
    Scaling("linear", "linear interpolation (PI)", _linear, {"factor": FACTOR}, hf_name="linear"),
    Scaling("ntk", "NTK-aware base change", _ntk, {"factor": FACTOR}),
    Scaling("dynamic", "dynamic NTK", _dynamic, {"factor": FACTOR, "original_max_position_embeddings": ORIGINAL_LEN},
            by_length=True, hf_name="dynamic", from_hf=_hf_dynamic),
    Scaling("yarn", "YaRN", _yarn, {
        "factor": FACTOR, "original_max_position_embeddings": ORIGINAL_LEN,
        "beta_fast": Param(default=32.0, inclusive=False, panel_top=1024.0),
        "beta_slow": Param(default=1.0, inclusive=False, panel_top=1024.0),
        "attention_factor": Param(inclusive=False),
        "mscale": Param(), "mscale_all_dim": Param(),
        "truncate": Param(default=True, kind="flag"),
    }, hf_name="yarn", from_hf=_hf_yarn),
    Scaling("llama3", "Llama 3.1", _llama3, {
        "factor": FACTOR, "original_max_position_embeddings": ORIGINAL_LEN,
        "low_freq_factor": Param(default=1.0, inclusive=False, panel_top=64.0),
        "high_freq_factor": Param(default=4.0, inclusive=False, panel_top=64.0),
    }, hf_name="llama3", from_hf=_hf_original),
)}


def scaling_labels() -> dict[str, str]:
    """name -> label of every row of SCALINGS, as the table holds them now."""
    return {name: s.label for name, s in SCALINGS.items()}


# Views of SCALINGS taken at import, for callers that want one column (HF's name for the first).
ROPE_INIT_FUNCTIONS: dict[str, ScalingFn] = {name: s.init for name, s in SCALINGS.items()}
ROPE_SCALING_LABELS: dict[str, str] = scaling_labels()


def scaling_row(kind: str | None) -> Scaling:
    """The row of a scaling type ('none' for None); a ValueError that names the known ones otherwise."""
    row = SCALINGS.get(kind or "none")
    if row is None:
        raise ValueError(f"unknown RoPE scaling {kind!r}; choose one of {list(SCALINGS)}.")
    return row


def panel_params() -> dict[str, Param]:
    """The optional parameters the RoPE page's panel offers (YaRN's betas, Llama 3's frequency factors), by name."""
    return {name: p for s in SCALINGS.values() for name, p in s.params.items() if p.panel_top is not None}


def _check_param(name: str, value: Any, p: Param) -> int | float | bool:
    """One scaling parameter as a clean value, or a ValueError that says what is allowed."""
    if p.kind == "flag":
        return bool(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"'{name}' must be a number, got {value!r}.")
    if p.kind == "whole":
        if value < p.lower or value != int(value):
            raise ValueError(f"'{name}' must be a whole number >= {p.lower}, got {value}.")
        return int(value)
    if value < p.lower or (value == p.lower and not p.inclusive):
        raise ValueError(f"'{name}' must be {'>=' if p.inclusive else '>'} {p.lower:g}, got {value:g}.")
    return float(value)


def validate_scaling(scaling: dict[str, Any] | None) -> dict[str, Any] | None:
    """Check a HF-style scaling dict; return a clean copy (accepts 'rope_type' for 'type')."""
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise ValueError("rope_scaling must be a dict such as {'type': 'linear', 'factor': 2}.")
    scaling = dict(scaling)
    kind = scaling.pop("type", None) or scaling.pop("rope_type", None)
    if kind not in SCALINGS:
        raise ValueError(f"unknown RoPE scaling {kind!r}; choose one of {list(SCALINGS)}.")
    spec = SCALINGS[kind].params
    unknown = sorted(set(scaling) - set(spec))
    if unknown:
        raise ValueError(f"RoPE scaling '{kind}' does not take {', '.join(unknown)}.")
    clean: dict[str, Any] = {"type": kind}
    for name, p in spec.items():
        value = scaling.get(name, p.default)
        if value is None:
            if p.required:
                raise ValueError(f"RoPE scaling '{kind}' needs '{name}'.")
            continue
        clean[name] = _check_param(name, value, p)
    if kind == "llama3" and clean["high_freq_factor"] <= clean["low_freq_factor"]:
        raise ValueError("Llama 3 scaling needs high_freq_factor > low_freq_factor.")
    return clean


def inv_freq(
    d_k: int, base: float = 10000.0, scaling: dict[str, Any] | None = None, seq_len: int | None = None
) -> tuple[torch.Tensor, float]:
    """(theta', attention_factor) for a head of width d_k under an optional scaling.  float64.

    seq_len only matters for a scaling recomputed by length ('dynamic', which recomputes the base).
    """
    scaling = validate_scaling(scaling)
    freqs, attention_factor = scaling_row(scaling and scaling["type"]).init(d_k, base, scaling or {}, seq_len)
    return freqs, attention_factor


# ---------------------------------------------------------------------------------------------
# rotation
# ---------------------------------------------------------------------------------------------


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """m * theta_i for every position and pair.  (T,) x (d_k/2,) -> (T, d_k/2) float64."""
    return positions.to(torch.float64)[:, None] * inv_freq.to(torch.float64, copy=False)[None, :]


def rope_cos_sin(
    positions: torch.Tensor, inv_freq: torch.Tensor, attention_factor: float = 1.0, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles, times attention_factor, cast once.  Each (T, d_k/2)."""
    ang = rope_angles(positions, inv_freq.to(positions.device))
    return (ang.cos() * attention_factor).to(dtype), (ang.sin() * attention_factor).to(dtype)


def rotate_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """(a, b) -> (a cos - b sin, a sin + b cos) on pairs (2i, 2i+1).  x: (..., T, d_k)."""
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, d_k/2)
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def rotate_half_convention(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """HF Llama / GPT-NeoX convention: pairs (i, i + d_k/2); x*cos + rotate_half(x)*sin."""
    h = x.shape[-1] // 2
    cos2, sin2 = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    rotated = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * cos2 + rotated * sin2


def interleaved_to_half_perm(d_k: int) -> torch.Tensor:
    """[0, 2, 4, ..., 1, 3, 5, ...]: half(x[perm]) == interleaved(x)[perm]."""
    return torch.cat([torch.arange(0, d_k, 2), torch.arange(1, d_k, 2)])


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | list[int] | list[float],
    inv_freq: torch.Tensor,
    attention_factor: float = 1.0,
    convention: str = "interleaved",
) -> torch.Tensor:
    """Rotate the last dim of x (..., T, d_k) at `positions` (T,). Applied to Q and K only, per head."""
    positions = torch.as_tensor(positions, device=x.device)
    cos, sin = rope_cos_sin(positions, inv_freq, attention_factor, dtype=x.dtype)
    if convention == "interleaved":
        return rotate_interleaved(x, cos, sin)
    if convention == "half":
        return rotate_half_convention(x, cos, sin)
    raise ValueError(f"convention must be 'interleaved' or 'half', got {convention!r}.")


def wavelengths(inv_freq: torch.Tensor) -> torch.Tensor:
    """lambda_i = 2 pi / theta_i: tokens per full turn of pair i."""
    return 2 * math.pi / inv_freq
