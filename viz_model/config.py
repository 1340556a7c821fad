"""ModelConfig: every knob of the tiny transformer, validated on construction."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

POS_ENCODINGS = ("none", "sinusoidal", "learned", "rope", "alibi")  # alibi: a per-head distance penalty
NORM_POSITIONS = ("pre", "post")
QKV_MODES = ("separate", "shared_qk", "shared_kv", "none")
NORMS = ("layernorm", "batchnorm", "rmsnorm")
MLPS = ("gelu", "gelu_tanh", "swiglu")

# Limits of what a config may describe: large enough for GPT-2 medium/large (d 1024-1280, 24-36 layers)
# and ~1B-parameter Llama-family checkpoints (Llama 3.2 1B: d 2048, 32 heads, 8 KV heads, 128k vocab and
# context; Gemma: 256k vocab). What the Train page lets a student train has its own, much smaller, budget.
MAX_VOCAB = 262_144
MAX_D_MODEL = 4096
MAX_HEADS = 64
MAX_LAYERS = 48
MAX_LEN = 131_072
# d_ff: GPT-2 uses 4*d, Llama 2.7-3.5*d (SwiGLU), Qwen2.5 ~5.8*d, Gemma 8*d; 8*d_model covers them all.
MAX_D_FF = 8 * MAX_D_MODEL


@dataclass
class ModelConfig:
    vocab_size: int = 256          # tokens in the vocabulary
    d_model: int = 64              # width of the residual stream
    n_heads: int = 4               # attention heads per layer; d_k = d_model // n_heads
    n_layers: int = 2              # transformer blocks
    d_ff: int = 256                # hidden width of the MLP
    max_len: int = 64              # context length the model is built (and trained) for
    dropout: float = 0.0
    pos_encoding: str = "rope"     # "none" | "sinusoidal" | "learned" | "rope" | "alibi"
    rope_base: float = 10000.0
    rope_scaling: dict[str, Any] | None = None  # HF-style {"type": ..., "factor": ..., ...}
    norm_position: str = "pre"     # LayerNorm before ("pre") or after ("post") each sublayer
    tie_weights: bool = True       # output projection shares the token-embedding matrix
    pad_id: int = 0                # id of <pad>; targets equal to -100 are ignored by the loss
    # Architecture options (defaults = the original model; GPT-2 / Llama checkpoints set them).
    qkv: str = "separate"          # "separate" W_Q, W_K, W_V | "shared_qk" Q = K | "shared_kv" K = V | "none" X X^T
    n_kv_heads: int | None = None  # grouped-query attention: K/V heads (None = n_heads); n_heads % n_kv_heads == 0
    norm: str = "layernorm"        # "layernorm" | "batchnorm" | "rmsnorm" for ln1, ln2 and ln_f
    norm_eps: float = 1e-5         # epsilon inside every norm's square root
    residual: bool = True          # False drops the x + ... bypass around each sublayer
    mlp: str = "gelu"              # "gelu" | "gelu_tanh" (GPT-2's gelu_new) | "swiglu" (Llama)
    embed_scale: bool = True       # multiply token embeddings by sqrt(d_model) (the 2017 paper); GPT-2/Llama: False
    attn_bias: bool = True         # bias on the Q/K/V projections
    out_bias: bool = True          # bias on W_O
    mlp_bias: bool = True          # bias on the MLP's linear layers
    # The attention mask by name: a kind of viz_model.masks.MASKS a model can use (its MODEL_MASKS: "causal",
    # "bidirectional", "sliding_window", ...). `causal` is read from the kind; in a checkpoint's JSON the key
    # "causal": true / false (every checkpoint before #27) still names "causal" / "bidirectional" (from_dict).
    mask: str = "causal"
    mask_params: dict[str, int] | None = None  # that kind's parameters, e.g. {"stride": 4} (None: its defaults)

    def __post_init__(self) -> None:
        _check_int("vocab_size", self.vocab_size, 2, MAX_VOCAB)
        _check_int("d_model", self.d_model, 2, MAX_D_MODEL)
        _check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        _check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        _check_int("d_ff", self.d_ff, 1, MAX_D_FF)
        _check_int("max_len", self.max_len, 1, MAX_LEN)
        _check_int("pad_id", self.pad_id, 0, self.vocab_size - 1)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                f"so that every head gets the same width d_k."
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"pos_encoding must be one of {POS_ENCODINGS}, got {self.pos_encoding!r}.")
        if self.norm_position not in NORM_POSITIONS:
            raise ValueError(f"norm_position must be 'pre' or 'post', got {self.norm_position!r}.")
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal encoding needs an even d_model, got {self.d_model}.")
        if self.pos_encoding == "rope":
            if self.d_k % 2:
                raise ValueError(
                    f"RoPE rotates pairs of dimensions, so d_k = d_model / n_heads must be even "
                    f"(got d_k = {self.d_k})."
                )
            if not (math.isfinite(self.rope_base) and self.rope_base > 1.0):
                raise ValueError(f"rope_base must be a finite number > 1, got {self.rope_base}.")
        if self.rope_scaling is not None:
            if self.pos_encoding != "rope":
                raise ValueError("rope_scaling only applies when pos_encoding is 'rope'.")
            from viz_model.rope import validate_scaling  # local: rope imports nothing from here

            self.rope_scaling = validate_scaling(self.rope_scaling)
        if self.pos_encoding == "sinusoidal":
            from viz_model.positional import MAX_DIM, MAX_POSITIONS  # local: keeps config import-light

            if self.d_model > MAX_DIM or self.max_len > MAX_POSITIONS:
                raise ValueError(f"sinusoidal encoding is available up to d_model {MAX_DIM} and max_len "
                                 f"{MAX_POSITIONS:,}; use 'learned' or 'rope' for a larger model.")
        self._check_architecture()
        self._check_mask()

    def _check_mask(self) -> None:
        from viz_model.masks import validate_model_mask  # local: masks imports torch, config stays light

        self.mask_params = validate_model_mask(self.mask, self.mask_params)

    def _check_architecture(self) -> None:
        for name, value, allowed in (("qkv", self.qkv, QKV_MODES), ("norm", self.norm, NORMS),
                                     ("mlp", self.mlp, MLPS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}.")
        for name in ("residual", "embed_scale", "attn_bias", "out_bias", "mlp_bias"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        eps = self.norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 < eps < 1.0:
            raise ValueError(f"norm_eps must be a small positive number (0 < eps < 1), got {eps!r}.")
        if self.n_kv_heads is None:
            return
        _check_int("n_kv_heads", self.n_kv_heads, 1, self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}): "
                             f"each key/value head serves the same number of query heads.")
        if self.n_kv_heads != self.n_heads and self.qkv in ("shared_qk", "none"):
            raise ValueError(f"qkv={self.qkv!r} uses the same vectors for queries and keys, so there must be as "
                             f"many key heads as query heads: set n_kv_heads to None or {self.n_heads}.")

    @property
    def kv_heads(self) -> int:
        """Number of key/value heads (n_heads unless grouped-query attention is used)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def causal(self) -> bool:
        """Whether a query never reads a later key: the mask kind's row in viz_model.masks.MASKS says."""
        from viz_model.masks import MASKS

        return MASKS[self.mask].causal

    def to_dict(self) -> dict[str, Any]:
        """Every field, the mask as the JSON wrote it before #27: "causal" after norm_position, and "mask" /
        "mask_params" only for a kind that "causal" cannot name, so a causal or bidirectional model saved now writes
        the JSON it wrote before."""
        out: dict[str, Any] = {}
        for name, value in dataclasses.asdict(self).items():
            if name not in ("mask", "mask_params"):
                out[name] = value
            if name == "norm_position":
                out["causal"] = self.causal
        if self.mask_params is not None or self.mask not in JSON_ALIAS.values():
            out.update(mask=self.mask, mask_params=self.mask_params)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        """A config from its JSON; "causal": true / false is the alias of mask "causal" / "bidirectional"."""
        if not isinstance(data, dict):
            raise ValueError("config must be a JSON object.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known - {"causal"})
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}.")
        data = dict(data)
        if "causal" in data:
            causal = data.pop("causal")
            if not isinstance(causal, bool):
                raise ValueError(f"causal must be true or false, got {causal!r}.")
            data["mask"] = data.get("mask") or JSON_ALIAS[causal]
            if cls(**data).causal != causal:
                raise ValueError(f"the config says causal: {str(causal).lower()} but mask {data['mask']!r}, which "
                                 f"is {'not ' if causal else ''}causal.")
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "ModelConfig":
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}.")
        return cls.from_dict({**PRESETS[name], **overrides})  # a recipe's JSON may say "causal": false


def _check_int(name: str, value: Any, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}.")


JSON_ALIAS = {True: "causal", False: "bidirectional"}  # a checkpoint's "causal": true / false -> its mask kind

# Presets are data, not code paths (minGPT's model_type idea).
PRESETS: dict[str, dict[str, Any]] = {
    # Fast enough to train in seconds in a test or a live demo.
    "tiny": dict(d_model=32, n_heads=2, n_layers=2, d_ff=64, max_len=32),
    # The default lecture model: 4 heads x 2 layers reads well on a projector.
    "classroom": dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, max_len=64),
}

__all__ = ["ModelConfig", "PRESETS", "POS_ENCODINGS", "NORM_POSITIONS", "QKV_MODES", "NORMS", "MLPS"]
