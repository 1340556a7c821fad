"""The one way pages cache: traced passes and checks (st.cache_data), figures per exact input (cache_resource)."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np
import streamlit as st
import torch

from viz_model.attention import LayerTrace
from viz_model.checkpoint import Checkpoint
from viz_model.lessons import explorer as lesson
from viz_model.masks import to_additive

T = TypeVar("T")


def model_id(ckpt: Checkpoint) -> str:
    """Cache identity of a loaded (cached, read-only) model."""
    return f"{ckpt.path}:{id(ckpt.model)}"


def cached_trace(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None = None,
                 scale_scores: bool = True, temperature: float = 1.0, layers: tuple[int, ...] | None = None) -> dict:
    """One traced forward pass as numpy arrays (B dropped); cached_checks recomputes it step by step per layer.

    attn_mask is mask_bits(mask). layers: trace only these (the layers on screen) and run no block after the last
    of them; the arrays keep their (L, ...) shape, NaN in the layers not traced, and data["layers"] names the traced
    ones (None: every layer). No pass computes the LM head: no view of a trace shows logits. Cached under input_key
    of the arguments: st.cache_data hashes a tuple of T ids one element at a time, every rerun, for every call."""
    ids = tuple(ids)
    layers = None if layers is None else tuple(sorted({int(i) for i in layers}))
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature), layers)
    return _widen(_trace(_model, key, ids, attn_mask, bool(scale_scores), float(temperature), layers))


PER_LAYER = ("q", "k", "v", "scores", "probs", "head_out", "attn_out", "x_in", "entropy")


def _widen(data: dict) -> dict:
    """The cache keeps only the traced layers' arrays (a GPT-2 small pass of one layer at T = 32: 0.6 MB instead of
    7.5 MB, so a class's passes fit); the caller gets them at their layer numbers, (L, ...) with NaN elsewhere.
    In place: st.cache_data hands every caller its own copy."""
    layers, n = data["layers"], data.pop("n_layers")
    if len(layers) == n:
        return data
    for name in PER_LAYER:
        kept = data[name]
        data[name] = np.full((n, *kept.shape[1:]), np.nan, dtype=kept.dtype)
        data[name][list(layers)] = kept
    return data


# A class on a 12-layer model: 6 sentences x 2 masks x (3 grid pages + 12 single layers) = 180 passes
@st.cache_data(max_entries=256, show_spinner=False)
def _trace(_model, key: str, _ids: tuple[int, ...], _attn_mask: bytes | None, _scale_scores: bool,
           _temperature: float, _layers: tuple[int, ...] | None = None) -> dict:
    T = len(_ids)
    mask = None if _attn_mask is None else torch.from_numpy(
        np.unpackbits(np.frombuffer(_attn_mask, dtype=np.uint8))[: T * T].reshape(T, T).astype(bool))
    return lesson.trace_arrays(_model, _ids, mask, _scale_scores, _temperature, _layers)


def cached_checks(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None, scale_scores: bool,
                  temperature: float, layer: int, layers: tuple[int, ...] | None = None) -> dict[str, float]:
    """lesson.pipeline_check for one layer of cached_trace's pass, from its arrays: only the layer on screen is
    recomputed (the same arguments as cached_trace, then the layer; `layers` as cached_trace's, naming the pass)."""
    ids = tuple(ids)
    layers = None if layers is None else tuple(sorted({int(i) for i in layers}))
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature), layers)
    return _checks(_model, key, layer, ids, attn_mask, bool(scale_scores), float(temperature), model_key, layers)


@st.cache_data(max_entries=128, show_spinner=False)
def _checks(_model, key: str, layer: int, _ids, _attn_mask, _scale_scores, _temperature, _model_key,
            _layers=None) -> dict:
    data = cached_trace(_model, _model_key, _ids, _attn_mask, _scale_scores, _temperature, _layers)
    dev = _model.device
    arr = lambda name: torch.from_numpy(data[name][layer][None]).to(dev)  # noqa: E731  (1, ...) like a trace
    additive = to_additive(torch.from_numpy(data["allowed"]).to(dev), torch.float32)
    lt = LayerTrace(q=arr("q"), k=arr("k"), v=arr("v"), scores=arr("scores"), mask=additive, probs=arr("probs"),
                    head_out=arr("head_out"), attn_out=arr("attn_out"))
    return lesson.layer_check(_model, arr("x_in"), lt, layer, torch.arange(len(_ids), device=dev), data["scale"])


def mask_bits(mask: torch.Tensor | np.ndarray | None) -> bytes | None:
    """A (T, T) bool mask as packed bytes: a cheap, exact cache key."""
    return None if mask is None else np.packbits(np.asarray(mask, dtype=bool)).tobytes()


def input_key(*parts) -> str:
    """A short digest of everything a view depends on (model, ids, tokens, mask bits, knobs): the figure cache
    then hashes one 32-character string per figure instead of walking T ids and T tokens every time."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


# A class's figures and small results: 60 students on a dozen pages outgrow 128 entries, and an evicted figure is
# rebuilt on the next rerun.
@st.cache_resource(max_entries=1024, show_spinner=False)
def _built(name: str, key: tuple, _build: Callable[[], T]) -> T:
    return _build()


def cached(name: str, key: tuple, build: Callable[[], T]) -> T:
    """Build a figure (or any read-only result: a generation run, a table) once per exact input for the whole
    server: 60 students on the same example sentence share it. Safe because nothing mutates what it returns
    (st.plotly_chart serialises a copy of a figure via to_dict). Keep key small (input_key(...) plus a few
    ints): it is hashed on every rerun. Traced passes use st.cache_data instead (cached_trace), which hands each
    caller its own copy of the arrays."""
    return _built(name, key, build)


class SharedResults:
    """Slow measurements behind a button, kept for everyone on the server: the newest `size` results by key, and a
    lock so that one runs at a time (a class clicking at once would otherwise stack up 60 runs on 2 cores)."""

    def __init__(self, size: int):
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()
        self.size = size

    def get(self, key: str):
        return self.items.get(key)

    def put(self, key: str, value) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.size:
            self.items.popitem(last=False)

    @contextlib.contextmanager
    def turn(self, busy: str) -> Iterator[bool]:
        """True while this session may measure; False (and `busy` shown) when another measurement runs."""
        if not self.lock.acquire(blocking=False):
            st.info(busy)
            yield False
            return
        try:
            yield True
        finally:
            self.lock.release()


def shared_results(name: str, size: int = 16) -> SharedResults:
    """The server's one SharedResults called `name` (one per lesson, or per lesson and device)."""
    return cached("shared_results", (name,), lambda: SharedResults(size))
