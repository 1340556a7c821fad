"""Which models exist (shipped, random baseline, trained in this app) and cached loading."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
import torch

from viz_model import ASSETS_DIR, checkpoint
from viz_model.checkpoint import Checkpoint
from viz_model.config import ModelConfig
from viz_model.device import resolve_device
from viz_model.model import TinyTransformer
from viz_model.tokenizer import load_tokenizer

MODELS_DIR = ASSETS_DIR / "models"
DEFAULT_MODEL = "classroom"
RANDOM_MODEL = "random-init"
USER_MODELS_KEY = "user_models"  # session_state: {key: path} of checkpoints trained/uploaded by this user


@dataclass(frozen=True)
class ModelEntry:
    key: str
    title: str
    description: str
    path: str | None  # None for the random baseline
    kind: str = "transformer"  # checkpoint.MODEL_KINDS: what the sidebar's pages can run is a "transformer"


def _shipped() -> list[ModelEntry]:
    """Every page asks this (sidebar, current model, ...) several times a rerun: re-read the metadata only when a
    file in the folder changed (a directory listing with mtimes costs a fraction of parsing every JSON)."""
    try:
        stamp = tuple(sorted((e.name, i.st_mtime_ns, i.st_size) for e in os.scandir(MODELS_DIR) for i in [e.stat()]))
    except OSError:
        stamp = ()
    return list(_read_shipped(str(MODELS_DIR), stamp))


@functools.lru_cache(maxsize=8)
def _read_shipped(folder: str, stamp: tuple) -> tuple[ModelEntry, ...]:
    entries = []
    for js in sorted(Path(folder).glob("*.json")):
        try:
            doc = json.loads(js.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        meta, weights = doc.get("metadata", {}), js.with_suffix(".safetensors")
        if weights.exists():
            entries.append(ModelEntry(js.stem, meta.get("title", js.stem), meta.get("description", ""), str(weights),
                                      doc.get("kind", "transformer")))
    entries.sort(key=lambda e: (e.key != DEFAULT_MODEL, e.key))
    return tuple(entries)


def available_models(kinds: tuple[str, ...] | None = None) -> list[ModelEntry]:
    """Shipped models (default first), this user's own models, then the untrained baseline; only `kinds` if given
    (the sidebar's pages need a transformer; the recurrent and encoder-decoder lessons pick their own models)."""
    user = [ModelEntry(k, f"{k} (yours)", "trained or uploaded in this session", p, _kind(p))
            for k, p in st.session_state.get(USER_MODELS_KEY, {}).items()]
    baseline = ModelEntry(RANDOM_MODEL, "untrained (random weights)",
                          "the same architecture before training: its attention means nothing", None)
    return [e for e in (*_shipped(), *user, baseline) if kinds is None or e.kind in kinds]


@functools.lru_cache(maxsize=256)
def _kind(path: str) -> str:
    """The model kind a checkpoint's JSON names (older ones name none: a transformer)."""
    try:
        return json.loads(checkpoint.json_path(path).read_text()).get("kind", "transformer")
    except (OSError, json.JSONDecodeError):
        return "transformer"


def register_user_model(key: str, path: str | Path) -> None:
    st.session_state.setdefault(USER_MODELS_KEY, {})[key] = str(path)


@st.cache_resource(show_spinner="Loading model…", max_entries=16)
def _load(path: str, mtime: float, device: str) -> Checkpoint:
    ckpt = checkpoint.load_checkpoint(path, device=device)
    ckpt.model.requires_grad_(False)  # shared between all users: read-only
    return ckpt


@st.cache_resource(show_spinner=False)
def _random_model(device: str) -> Checkpoint:
    tok = load_tokenizer("word")
    torch.manual_seed(0)
    cfg = ModelConfig.preset("classroom", vocab_size=max(tok.get_vocab_size(), 2))
    model = TinyTransformer(cfg).eval().requires_grad_(False).to(device)
    return Checkpoint(model, tok, {"title": "untrained (random weights)", "description": "seed 0, no training"})


def load_model(key: str, device: str = "auto") -> Checkpoint:
    """A read-only, process-wide cached model: weights are loaded once per server, not per session."""
    dev = str(resolve_device(device))
    if key == RANDOM_MODEL:
        return _random_model(dev)
    entry = next((e for e in available_models() if e.key == key), None)
    if entry is None or entry.path is None:
        raise ValueError(f"there is no model called {key!r}.")
    return _load(entry.path, Path(entry.path).stat().st_mtime, dev)


