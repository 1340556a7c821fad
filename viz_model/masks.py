"""Attention masks. Convention: a boolean mask is True where a query MAY attend to a key.

Shapes: an attention mask is (T_q, T_k) or broadcastable to (B, H, T_q, T_k);
a key padding mask is (B, T) with True for real tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def strided_mask(T: int, stride: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The Sparse Transformer's strided pattern (Child et al. 2019, "Generating Long Sequences with Sparse
    Transformers", section 4.2), its two heads' sets in one mask: query t sees key s if s <= t and either
    t - s < stride (the local head: itself and the stride - 1 tokens before it) or (t - s) % stride == 0 (the strided
    head: every stride-th token further back).  stride 1 (or >= T) is the causal mask.  (T, T) bool."""
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}.")
    idx = torch.arange(T, device=device)
    offset = idx[:, None] - idx[None, :]  # (T, T): query - key
    return (offset >= 0) & ((offset < stride) | (offset % stride == 0))


def sink_window_mask(T: int, window: int, sinks: int, device: torch.device | str | None = None) -> torch.Tensor:
    """StreamingLLM's cache as a mask (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks"):
    query t sees the first `sinks` tokens (the attention sinks) and the causal window of the last `window` tokens,
    itself included. sinks 0 is the sliding window; window >= T is the causal mask.  (T, T) bool."""
    if sinks < 0:
        raise ValueError(f"the number of sink tokens must be at least 0, got {sinks}.")
    keys = torch.arange(T, device=device)
    sink_keys = causal_mask(T, device) & (keys < sinks)[None, :]  # (T, T): the first `sinks` keys, never the future
    return sliding_window_mask(T, window, causal=True, device=device) | sink_keys


def key_padding_causal_mask(T: int, real, device: torch.device | str | None = None) -> torch.Tensor:
    """The causal mask with the pad keys' columns blocked: real (T,) bool, True for real tokens.  (T, T) bool."""
    real = torch.as_tensor(real, dtype=torch.bool, device=device)
    if real.shape != (T,):
        raise ValueError(f"the padding mask needs one flag per token ({T}), got shape {tuple(real.shape)}.")
    return causal_mask(T, device) & real[None, :]


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


# -- the mask table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class MaskParam:
    """One integer parameter of a mask kind; the gallery draws it as a slider from `low` to T."""
    name: str      # the builder's keyword (and a ModelConfig.mask_params key)
    key: str       # the gallery widget's key and URL parameter: masks_<key>
    label: str
    low: int
    default: int   # cut to T on a shorter sentence
    help: str


@dataclass(frozen=True)
class MaskKind:
    """A kind of mask: its builder `build(T, device=..., **params)` -> (T, T) bool, and how the app may use it."""
    label: str
    build: Callable[..., torch.Tensor]
    params: tuple[MaskParam, ...] = ()
    causal: bool = True         # query t never reads a later key
    needs: str | None = None    # "real": the sentence's real-token flags (padding) | "cells": an edited grid
    model: bool = True          # a model may be built with it (ModelConfig.mask): it depends on T and params only


_WINDOW = MaskParam("window", "window", "Window width", 1, 3,
                    "Each query sees itself and the w − 1 tokens before it.")
_PREFIX = MaskParam("prefix_len", "prefix", "Prefix length", 0, 3,
                    "The prefix sees itself in both directions; the rest is causal.")
_STRIDE = MaskParam("stride", "stride", "Stride", 1, 3,
                    "Each query sees itself, the stride − 1 tokens before it, and every stride-th token further back "
                    "(the Sparse Transformer's strided pattern).")

_SINKS = MaskParam("sinks", "sinks", "Sink tokens", 0, 1,
                   "The first tokens every query keeps reading, however far back (StreamingLLM's attention sinks).")


def _prefix_lm(T: int, prefix_len: int, device=None) -> torch.Tensor:
    return prefix_lm_mask(T, min(prefix_len, T), device)


def _custom(T: int, cells=None, device=None) -> torch.Tensor:
    if cells is None:
        raise ValueError("a custom mask needs its cells.")
    return custom_mask(cells, T).to(device)


# The single list of mask kinds: build_mask, the Masks page's gallery (its options, labels and sliders) and
# ModelConfig.mask all iterate it. A new kind is one row (and its builder) plus its tests.
MASKS: dict[str, MaskKind] = {
    "causal": MaskKind("Causal (decoder)", lambda T, device=None: causal_mask(T, device)),
    "bidirectional": MaskKind("Bidirectional (encoder)", lambda T, device=None: bidirectional_mask(T, device),
                              causal=False),
    "padding": MaskKind("Padding", lambda T, real, device=None: key_padding_causal_mask(T, real, device),
                        needs="real", model=False),
    "sliding_window": MaskKind("Sliding window", lambda T, window, device=None: sliding_window_mask(
        T, window, causal=True, device=device), params=(_WINDOW,)),
    "prefix_lm": MaskKind("Prefix-LM", _prefix_lm, params=(_PREFIX,), causal=False),
    "strided": MaskKind("Strided (sparse)", lambda T, stride, device=None: strided_mask(T, stride, device),
                        params=(_STRIDE,)),
    "sink_window": MaskKind("Sliding window + sinks", lambda T, window, sinks, device=None: sink_window_mask(
        T, window, sinks, device), params=(_WINDOW, _SINKS)),
    "custom": MaskKind("Custom (edit cells)", _custom, causal=False, needs="cells", model=False),
}
MASK_KINDS = tuple(MASKS)
MODEL_MASKS = tuple(k for k, row in MASKS.items() if row.model)


def mask_kind(kind: str) -> MaskKind:
    if kind not in MASKS:
        raise ValueError(f"unknown mask kind {kind!r}; choose one of {MASK_KINDS}.")
    return MASKS[kind]


def short_name(kind: str) -> str:
    """A kind as a picker and a link name it: "sliding window" for "sliding_window"."""
    return kind.replace("_", " ")


def kind_named(name: str) -> str:
    """The kind a link or a picker names: its key, its short name ("sliding window") or its label ("Sliding window")."""
    for kind, row in MASKS.items():
        if name in (kind, short_name(kind), row.label):
            return kind
    raise ValueError(f"unknown mask {name!r}; choose one of {tuple(map(short_name, MASK_KINDS))}.")


def build_mask(kind: str, T: int, *, device: torch.device | str | None = None, **inputs: Any) -> torch.Tensor:
    """One entry point for every kind: (T, T) bool. `inputs`: the kind's parameters (missing ones take the table's
    default, cut to T) and what it needs (`real` for padding, `cells` for custom)."""
    row = mask_kind(kind)
    args = {p.name: min(p.default, T) for p in row.params}
    args.update(inputs)
    return row.build(T, device=device, **args)


def validate_model_mask(kind: str, params: dict[str, Any] | None) -> dict[str, int] | None:
    """ModelConfig.mask / mask_params checked against the table; the parameters as given (None: the defaults)."""
    if kind not in MODEL_MASKS:
        raise ValueError(f"a model's mask must be one of {MODEL_MASKS}, got {kind!r}.")
    if params is None:
        return None
    if not isinstance(params, dict):
        raise ValueError(f"mask_params must be a JSON object like {{'stride': 3}}, got {params!r}.")
    known = {p.name: p for p in MASKS[kind].params}
    for name, value in params.items():
        if name not in known:
            raise ValueError(f"the {kind!r} mask has no parameter {name!r}; it takes {tuple(known) or 'none'}.")
        if isinstance(value, bool) or not isinstance(value, int) or value < known[name].low:
            raise ValueError(f"the {kind!r} mask's {name} must be a whole number >= {known[name].low}, "
                             f"got {value!r}.")
    return dict(params)


def model_mask(config, T: int, past_len: int = 0, device: torch.device | str | None = None) -> torch.Tensor:
    """The (T, past_len + T) bool mask of a model's kind (config.mask), for T queries after past_len cached keys."""
    Tk = past_len + T
    return build_mask(config.mask, Tk, device=device, **(config.mask_params or {}))[past_len:]
