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
                 scale_scores: bool = True, temperature: float = 1.0) -> dict:
    """One traced forward pass as numpy arrays (B dropped); cached_checks recomputes it step by step per layer.

    attn_mask is mask_bits(mask). Cached under input_key of the arguments: st.cache_data hashes a tuple of T ids
    one element at a time, every rerun, for every cached call."""
    ids = tuple(ids)
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature))
    return _trace(_model, key, ids, attn_mask, bool(scale_scores), float(temperature))


@st.cache_data(max_entries=64, show_spinner=False)
def _trace(_model, key: str, _ids: tuple[int, ...], _attn_mask: bytes | None, _scale_scores: bool,
           _temperature: float) -> dict:
    model, ids, T = _model, _ids, len(_ids)
    mask = None if _attn_mask is None else torch.from_numpy(
        np.unpackbits(np.frombuffer(_attn_mask, dtype=np.uint8))[: T * T].reshape(T, T).astype(bool))
    with torch.no_grad():
        out = model(torch.tensor([ids], device=model.device), trace=True, attn_mask=mask,
                    scale_scores=_scale_scores, temperature=_temperature)
        tr = out.trace
        stack = lambda xs: torch.stack(xs).float().cpu().numpy()  # noqa: E731
        data = {n: stack([getattr(lt, n)[0] for lt in tr.layers])
                for n in ("q", "k", "v", "scores", "probs", "head_out", "attn_out")}  # (L, H, T, .), (L, T, d_model)
        data["x_in"] = stack([lesson.attention_input(model, tr, i)[0] for i in range(len(tr.layers))])
        data["allowed"] = torch.isfinite(tr.layers[0].mask).expand(tr.layers[0].probs.shape)[0, 0].cpu().numpy()
        data["entropy"] = lesson.row_entropy(torch.from_numpy(data["probs"])).numpy()  # (L, H, T)
        data["scale"] = lesson.score_scale(model, _scale_scores, _temperature)
    return data


def cached_checks(_model, model_key: str, ids: tuple[int, ...], attn_mask: bytes | None, scale_scores: bool,
                  temperature: float, layer: int) -> dict[str, float]:
    """lesson.pipeline_check for one layer of cached_trace's pass, from its arrays: only the layer on screen is
    recomputed (the same arguments as cached_trace, plus the layer)."""
    ids = tuple(ids)
    key = input_key(model_key, ids, attn_mask, bool(scale_scores), float(temperature))
    return _checks(_model, key, layer, ids, attn_mask, bool(scale_scores), float(temperature), model_key)


@st.cache_data(max_entries=128, show_spinner=False)
def _checks(_model, key: str, layer: int, _ids, _attn_mask, _scale_scores, _temperature, _model_key) -> dict:
    data = cached_trace(_model, _model_key, _ids, _attn_mask, _scale_scores, _temperature)
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
