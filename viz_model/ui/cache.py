"""The one way pages cache: cached(name, key, build), server-wide per exact input (figures, model passes, results);
cached_trace and cached_checks are the traced pass of the pages through it."""

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
    """One traced forward pass as read-only numpy arrays (B dropped); cached_checks recomputes it step by step.

    attn_mask is mask_bits(mask). layers: trace only these (the layers on screen) and run no block after the last
    of them; the arrays keep their (L, ...) shape, NaN in the layers not traced, and data["layers"] names the traced
    ones (None: every layer). No pass computes the LM head: no view of a trace shows logits."""
    ids = tuple(ids)
    knobs = (attn_mask, bool(scale_scores), float(temperature), _layer_set(layers))
    key = input_key(model_key, ids, *knobs)
    return _widen(cached("trace", (key,), lambda: _frozen(_trace(_model, ids, *knobs)), model_pass=True))


def _layer_set(layers) -> tuple[int, ...] | None:
    """The traced layers as one canonical key: sorted, each once (None: every layer)."""
    return None if layers is None else tuple(sorted({int(i) for i in layers}))


PER_LAYER = ("q", "k", "v", "scores", "probs", "head_out", "attn_out", "x_in", "entropy")


def _trace(model, ids: tuple[int, ...], attn_mask: bytes | None, scale_scores: bool, temperature: float,
           layers: tuple[int, ...] | None) -> dict:
    T = len(ids)
    mask = None if attn_mask is None else torch.from_numpy(
        np.unpackbits(np.frombuffer(attn_mask, dtype=np.uint8))[: T * T].reshape(T, T).astype(bool))
    return lesson.trace_arrays(model, ids, mask, scale_scores, temperature, layers)


def _frozen(data: dict) -> dict:
    """The cached pass is shared by every session: its arrays are made read-only, so a page that wrote into one
    would fail loudly instead of changing another student's chart."""
    for v in data.values():
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    return data


def _widen(data: dict) -> dict:
    """The cache keeps only the traced layers' arrays (a GPT-2 small pass of one layer at T = 32: 0.6 MB instead of
    7.5 MB, so a class's passes fit); the caller gets them at their layer numbers, (L, ...) with NaN elsewhere (a
    new dict: the cached one is shared)."""
    layers, n = data["layers"], data["n_layers"]
    if len(layers) == n:
        return data
    wide = dict(data)
    for name in PER_LAYER:
        kept = data[name]
        wide[name] = np.full((n, *kept.shape[1:]), np.nan, dtype=kept.dtype)
        wide[name][list(layers)] = kept
    return _frozen(wide)


def cached_checks(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None, scale_scores: bool,
                  temperature: float, layer: int, layers: tuple[int, ...] | None = None) -> dict[str, float]:
    """lesson.pipeline_check for one layer of cached_trace's pass, from its arrays: only the layer on screen is
    recomputed (the same arguments as cached_trace, then the layer; `layers` as cached_trace's, naming the pass)."""
    args = (tuple(ids), attn_mask, bool(scale_scores), float(temperature), _layer_set(layers))
    key = input_key(model_key, *args, int(layer))
    return cached("trace_checks", (key,), lambda: _checks(_model, model_key, int(layer), *args), model_pass=True)


def _checks(model, model_key: str, layer: int, ids, attn_mask, scale_scores, temperature, layers) -> dict:
    data = cached_trace(model, model_key, ids, attn_mask, scale_scores, temperature, layers)
    dev = model.device
    arr = lambda name: torch.from_numpy(data[name][layer][None].copy()).to(dev)  # noqa: E731  (1, ...) like a trace
    additive = to_additive(torch.from_numpy(data["allowed"].copy()).to(dev), torch.float32)
    lt = LayerTrace(q=arr("q"), k=arr("k"), v=arr("v"), scores=arr("scores"), mask=additive, probs=arr("probs"),
                    head_out=arr("head_out"), attn_out=arr("attn_out"))
    return lesson.layer_check(model, arr("x_in"), lt, layer, torch.arange(len(ids), device=dev), data["scale"])


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


# Model passes (traces, their checks, measurements) weigh more than figures: a budget of their own. A class on a
# 12-layer model: 6 sentences x 2 masks x (3 grid pages + 12 single layers) = 180 passes.
@st.cache_resource(max_entries=256, show_spinner=False)
def _passes(name: str, key: tuple, _build: Callable[[], T]) -> T:
    return _build()


def cached(name: str, key: tuple, build: Callable[[], T], *, model_pass: bool = False,
           spinner: str | None = None) -> T:
    """The one way pages cache: build a figure, a model pass or any read-only result once per exact input for the
    whole server (60 students on the same example sentence share it). Safe because nothing mutates what it returns
    (st.plotly_chart serialises a copy of a figure via to_dict; traced arrays are read-only). Keep key small
    (input_key(...) plus a few ints): it is hashed on every rerun. model_pass: keep it in the passes' budget.
    spinner: shown while it is built, if that takes more than half a second (st.spinner's own delay). Asked by
    keyword: st.cache_resource names positional arguments by inspect.signature on every call (Streamlit 1.67), 3.7 %
    of a 60-follower class's server time (py-spy --gil)."""
    store = _passes if model_pass else _built
    if spinner is None:
        return store(name=name, key=key, _build=build)
    with st.spinner(spinner):
        return store(name=name, key=key, _build=build)


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
