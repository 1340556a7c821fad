"""Which models exist (shipped, the instructor's model folders, trained in this app, random baseline) and cached
loading.

Model folders (Hugging Face layout: GPT-2, Llama, Mistral, Qwen2) come only from the instructor: the folders named
in ATTENTION_LAB_MODEL_DIRS at launch (`ATTENTION_LAB_MODEL_DIRS=/a:/b make run`), or, when it is unset, models/
(where `make models` downloads; set but empty: no folders at all). A student picks one of their names, never types a
path, and nothing a student does downloads anything. Each is listed with its size and loaded once per server
process."""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
import torch

from viz_model import ASSETS_DIR, checkpoint, hf
from viz_model.checkpoint import Checkpoint
from viz_model.config import ModelConfig
from viz_model.device import resolve_device
from viz_model.files import dir_stamp, file_stamp
from viz_model.model import TinyTransformer
from viz_model.tokenizer import load_tokenizer

MODELS_DIR = ASSETS_DIR / "models"
log = logging.getLogger("attention_lab")
# The English model reads any text (byte-level BPE); the instructor may start the server on another shipped model
# (ATTENTION_LAB_DEFAULT_MODEL=classroom). The test suite does, as its expectations were written on the classroom
# model; the English model's own tests name it.
ENGLISH_MODEL, CLASSROOM_MODEL = "english", "classroom"
DEFAULT_MODEL = os.environ.get("ATTENTION_LAB_DEFAULT_MODEL", ENGLISH_MODEL)
RANDOM_MODEL = "random-init"
USER_MODELS_KEY = "user_models"  # session_state: {key: path} of checkpoints trained/uploaded by this user


@dataclass(frozen=True)
class ModelEntry:
    key: str
    title: str
    description: str
    path: str | None  # None for the random baseline
    kind: str = "transformer"  # checkpoint.MODEL_KINDS: what the sidebar's pages can run is a "transformer"
    problem: str | None = None  # a model folder that cannot be loaded: listed, refused with this sentence
    folder: bool = False        # an instructor's Hugging Face model folder (path is the folder)


def _shipped() -> list[ModelEntry]:
    """Every page asks this (sidebar, current model, ...) several times a rerun: re-read the metadata only when a
    file in the folder changed (a directory listing with mtimes costs a fraction of parsing every JSON)."""
    return list(_read_shipped(str(MODELS_DIR), dir_stamp(MODELS_DIR)))


# lru_cache, not ui.cache.cached: a pure function of immutable arguments, the folder's file identities among them
# (files.dir_stamp), so a changed file is a new key; the sidebar asks it several times a rerun, outside any page.
@functools.lru_cache(maxsize=8)
def _read_shipped(folder: str, stamp: tuple) -> tuple[ModelEntry, ...]:
    entries = []
    for js in sorted(Path(folder).glob("*.json")):
        weights = js.with_suffix(".safetensors")
        try:
            doc = checkpoint.read_metadata(weights)
        except (OSError, ValueError):
            continue
        meta = doc["metadata"] or {}
        if weights.exists():
            entries.append(ModelEntry(js.stem, meta.get("title", js.stem), meta.get("description", ""), str(weights),
                                      doc.get("kind", "transformer")))
    entries.sort(key=lambda e: (e.key != DEFAULT_MODEL, e.key))
    return tuple(entries)


def available_models(kinds: tuple[str, ...] | None = None) -> list[ModelEntry]:
    """Shipped models (default first), the instructor's model folders, this user's own models, then the untrained
    baseline; only `kinds` if given (the sidebar's pages need a transformer; the recurrent and encoder-decoder
    lessons pick their own models)."""
    shipped = _shipped()
    user = [ModelEntry(k, f"{k} (yours)", "trained or uploaded in this session", p, _kind(p))
            for k, p in st.session_state.get(USER_MODELS_KEY, {}).items()]
    baseline = ModelEntry(RANDOM_MODEL, "untrained (random weights)",
                          "the same architecture before training: its attention means nothing", None)
    taken = {e.key for e in (*shipped, *user, baseline)}
    return [e for e in (*shipped, *folder_models(taken), *user, baseline) if kinds is None or e.kind in kinds]


# -- the instructor's model folders -----------------------------------------------------------------
def folder_models(taken: set[str] = frozenset()) -> list[ModelEntry]:
    """One entry per folder in ATTENTION_LAB_MODEL_DIRS, or models/ when it is unset (headers read once per change of
    the folders, no weights); a name that clashes with another model's key gets " (folder)" appended."""
    raw = hf.model_dirs_spec()
    if not raw.strip():
        return []
    out = []
    for d in _read_folders(raw, _folders_stamp(raw)):
        key = d.name if d.name not in taken else f"{d.name} (folder)"
        out.append(_folder_entry(key, d))
    return out


def _folder_entry(key: str, d: hf.ModelDir) -> ModelEntry:
    if d.problem is not None:
        return ModelEntry(key, f"{key} · unavailable", d.problem, str(d.path), problem=d.problem, folder=True)
    kind = d.model_type or "?"
    title = f"{key} · {kind} · {params_text(d.n_params or 0)} params · {hf.human_bytes(d.size_bytes)}"
    description = (f"a {kind} checkpoint from the instructor's model folders: {d.n_params or 0:,} parameters, "
                   f"{hf.human_bytes(d.size_bytes)} of weights, loaded once for everyone and read-only")
    return ModelEntry(key, title, description, str(d.path), folder=True)


def params_text(n: int) -> str:
    """124_439_808 -> '124M', 1_235_814_400 -> '1.2B', 34_816 -> '35K'."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 and unit == "B" else f"{value:.0f}{unit}"
    return str(n)


def _folders_stamp(raw: str) -> tuple:
    """Names, sizes and mtimes of the files in every listed folder (and its model sub-folders): a new, removed or
    rewritten file re-reads the list."""
    out = []
    for part in raw.split(":"):
        root = part.strip()
        if not root:
            continue
        root = str(Path(root).expanduser())
        out.append((root, dir_stamp(root, files_only=True)))
        if not os.path.isfile(os.path.join(root, "config.json")):
            try:
                subs = sorted(e.path for e in os.scandir(root) if e.is_dir())
            except OSError:
                subs = []
            out.extend((sub, dir_stamp(sub, files_only=True)) for sub in subs)
    return tuple(out)


# lru_cache, not ui.cache.cached: a pure function of immutable arguments, the folders' file identities among them
# (_folders_stamp), so a new, removed or rewritten file is a new key.
@functools.lru_cache(maxsize=8)
def _read_folders(raw: str, stamp: tuple) -> tuple[hf.ModelDir, ...]:
    try:
        return tuple(hf.model_dirs_from_env({hf.ENV_VAR: raw}))
    except OSError:  # an unreadable folder (permissions): the app still starts, with the other models
        log.exception("could not list the model folders in %s", hf.ENV_VAR)
        return ()


def _kind(path: str) -> str:
    """The model kind a checkpoint's JSON names (older ones name none: a transformer), read again when the JSON
    changes (a model retrained under the same name)."""
    return _read_kind(path, file_stamp(checkpoint.json_path(path)))


# lru_cache, not ui.cache.cached: a pure function of immutable arguments, the JSON's identity (path, mtime, size)
# among them, so a rewritten file is read again; asked for every user model at every rerun.
@functools.lru_cache(maxsize=256)
def _read_kind(path: str, stamp: tuple | None) -> str:
    try:
        return checkpoint.read_metadata(path)["kind"]
    except (OSError, ValueError):
        return "transformer"


def register_user_model(key: str, path: str | Path) -> None:
    st.session_state.setdefault(USER_MODELS_KEY, {})[key] = str(path)


@st.cache_resource(show_spinner="Loading model…", max_entries=16)
def _load(path: str, stamp: tuple | None, device: str) -> Checkpoint:  # stamp (files.file_stamp): a new file reloads
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
        return _random_model(device=dev)  # by keyword: see ui.cache.cached
    entry = next((e for e in available_models() if e.key == key), None)
    if entry is None or entry.path is None:
        raise ValueError(f"there is no model called {key!r}.")
    if entry.problem is not None:
        raise ValueError(f"“{entry.key}” cannot be loaded: {entry.problem}")
    return _load(path=entry.path, stamp=file_stamp(entry.path), device=dev)  # by keyword: see ui.cache.cached


