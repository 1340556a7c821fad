"""Checkpoints: safetensors weights + a JSON file (config, tokenizer, metadata) with the same stem.

Never a pickle. Writes are atomic (temp file, then rename); loading validates everything and
turns any problem into a ValueError a student can read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from viz_model import hf
from viz_model.config import ModelConfig
from viz_model.model import TinyTransformer
from viz_model.rnn import LSTM, RNN, RecurrentConfig, RecurrentLM
from viz_model.seq2seq import SEQ2SEQ, Seq2SeqConfig, Seq2SeqTransformer

FORMAT = "attention-lab-checkpoint"
VERSION = 1
MAX_WEIGHTS_BYTES = 256 * 1024 * 1024   # a classroom model is a few MB; refuse anything huge
MAX_JSON_BYTES = 16 * 1024 * 1024

TRANSFORMER = "transformer"  # the kind of a JSON without one (every older checkpoint); a translator is SEQ2SEQ


@dataclass(frozen=True)
class ModelKind:
    """One model class the app builds and reads (a checkpoint JSON's "kind"): its config class, the one builder
    (config -> model with random weights), its label on the Train page and its short name in sentences, whether it is
    recurrent (no attention to watch; reads left to right only), and whether the Train page's Model kind box offers
    it (the encoder-decoder comes with the translate task instead)."""
    name: str
    label: str
    short: str
    config_class: type
    build: Callable[[Any], torch.nn.Module]
    recurrent: bool = False
    on_train_form: bool = True

    def preset_config(self, preset: str, vocab_size: int, **overrides: Any) -> Any:
        """A fresh model's config from a size preset and overrides (a recurrent model has no presets)."""
        if self.recurrent:
            return self.config_class(kind=self.name, vocab_size=vocab_size, **overrides)
        return self.config_class.preset(preset, vocab_size=vocab_size, **overrides)


# A model class other than TinyTransformer says its kind in a `kind` attribute.
MODEL_KINDS: dict[str, ModelKind] = {k.name: k for k in (
    ModelKind(TRANSFORMER, "transformer", "transformer", ModelConfig, TinyTransformer),
    ModelKind(RNN, "RNN (nn.RNN, tanh)", "RNN", RecurrentConfig, RecurrentLM.from_config, recurrent=True),
    ModelKind(LSTM, "LSTM (nn.LSTM)", "LSTM", RecurrentConfig, RecurrentLM.from_config, recurrent=True),
    ModelKind(SEQ2SEQ, "encoder-decoder", "encoder-decoder", Seq2SeqConfig, Seq2SeqTransformer, on_train_form=False),
)}


def model_kind_row(kind: str) -> ModelKind:
    """The row of a kind; a ValueError that names the known ones otherwise."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"the checkpoint holds a model of kind {kind!r}; this app reads "
                         f"{', '.join(map(repr, MODEL_KINDS))}.")
    return MODEL_KINDS[kind]


def build_model(kind: str, config: Any) -> torch.nn.Module:
    """The app's one model factory: a fresh model of this kind from its config (random weights, torch's seed)."""
    return model_kind_row(kind).build(config)


def model_kind(model: torch.nn.Module) -> str:
    return getattr(model, "kind", TRANSFORMER)


@dataclass
class Checkpoint:
    model: torch.nn.Module  # TinyTransformer unless the JSON names another kind
    tokenizer: Tokenizer
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def json_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def _state_to_save(model: TinyTransformer) -> dict[str, torch.Tensor]:
    state = model.state_dict()
    if model.config.tie_weights:
        state.pop("head.weight", None)  # the same tensor as tok_emb.weight; stored once
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in state.items()}


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; a checkpoint is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(model: TinyTransformer, tokenizer: Tokenizer, path: str | Path,
         metadata: dict[str, Any] | None = None) -> Path:
    """Write PATH.safetensors and PATH.json atomically; returns the weights path."""
    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"a checkpoint path must end in .safetensors, got {path.name}.")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".safetensors.tmp")
    os.close(fd)
    try:
        save_file(_state_to_save(model), tmp, metadata={"format": FORMAT})
        weights = Path(tmp).read_bytes()
    finally:
        Path(tmp).unlink(missing_ok=True)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "kind": model_kind(model),
        "config": model.config.to_dict(),
        "tokenizer": json.loads(tokenizer.to_str()),
        "metadata": metadata or {},
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
    }
    # Both files are complete before either is renamed, so an interruption leaves the old pair readable
    # (the hash ties them together and catches a half-swapped pair).
    _atomic_write(path, weights)
    _atomic_write(json_path(path), json.dumps(doc, indent=1).encode())
    return path


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ValueError(f"the checkpoint's JSON file {path.name} is missing (it sits beside the weights).")
    doc = hf.read_json(path, MAX_JSON_BYTES)  # size-capped, valid JSON, an object: the one reader of both kinds
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path.name} is not an Attention Lab checkpoint description.")
    if doc.get("version") != VERSION:
        raise ValueError(f"{path.name} has checkpoint version {doc.get('version')!r}; this app reads {VERSION}.")
    return doc


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    if not path.exists():
        raise ValueError(f"the weights file {path.name} does not exist.")
    if path.stat().st_size > MAX_WEIGHTS_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB; that is not a classroom model.")
    with open(path, "rb") as f:
        head = f.read(9)
    if head[8:9] != b"{":  # safetensors: 8-byte header length, then a JSON header
        if head[:1] == b"\x80" or head[:2] == b"PK":
            raise ValueError(f"{path.name} looks like a pickle / torch.save file; only safetensors are accepted.")
        raise ValueError(f"{path.name} is not a valid safetensors file (no JSON header).")
    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise ValueError(f"{path.name} is not a valid safetensors file ({str(e)[:120]}).") from None


def _read_config(doc: dict[str, Any]) -> tuple[Any, Any]:
    """(config, build) for the JSON's model kind; absent kind = a TinyTransformer (older checkpoints)."""
    kind = doc.get("kind", TRANSFORMER)
    row = model_kind_row(kind)
    try:
        config = row.config_class.from_dict(doc.get("config"))
    except TypeError as e:
        raise ValueError(f"the checkpoint's config is invalid: {e}") from None
    if getattr(config, "kind", kind) != kind:
        raise ValueError(f"the checkpoint says kind {kind!r} but its config describes a {config.kind!r} model.")
    return config, row.build


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Read and validate a checkpoint; any problem is a ValueError with a readable sentence.

    A folder is a Hugging Face model folder (viz_model.hf: memory check instead of MAX_WEIGHTS_BYTES)."""
    path = Path(path)
    if path.is_dir():
        return Checkpoint(*hf.read_hf_folder(path, device))
    doc = _read_json(json_path(path))
    state = _read_weights(path)
    digest = doc.get("weights_sha256")
    if digest and hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise ValueError(f"{path.name} does not match its JSON file (the pair is incomplete or was mixed up).")
    config, build = _read_config(doc)
    try:
        tokenizer = Tokenizer.from_str(json.dumps(doc.get("tokenizer")))
    except Exception:  # tokenizers raises its own Exception type for bad JSON
        raise ValueError("the checkpoint's tokenizer could not be read.") from None
    if tokenizer.get_vocab_size() > config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens but the model only "
                         f"{config.vocab_size}.")
    model = build(config)
    _check_state(model, state)
    model.load_state_dict(state, strict=not config.tie_weights)
    model.eval()
    return Checkpoint(model.to(device), tokenizer, dict(doc.get("metadata") or {}), path)


def _check_state(model: TinyTransformer, state: dict[str, torch.Tensor]) -> None:
    expected = _state_to_save(model)
    missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or extra:
        raise ValueError("the weights do not fit this model's config (missing: "
                         f"{', '.join(missing[:3]) or 'none'}; unexpected: {', '.join(extra[:3]) or 'none'}).")
    for name, ref in expected.items():
        got = state[name]
        if got.shape != ref.shape:
            raise ValueError(f"weight {name} has shape {tuple(got.shape)} but the config needs {tuple(ref.shape)}.")
        if not ref.is_floating_point():  # an integer buffer, e.g. BatchNorm's num_batches_tracked
            if got.is_floating_point() or got.is_complex():
                raise ValueError(f"weight {name} must be a whole-number tensor, got {got.dtype}.")
            continue
        if not got.is_floating_point():
            raise ValueError(f"weight {name} is not a floating-point tensor.")
        if not torch.isfinite(got).all():
            raise ValueError(f"weight {name} contains NaN or infinite values.")


def load(path: str | Path, device: torch.device | str = "cpu") -> tuple[TinyTransformer, Tokenizer]:
    ckpt = load_checkpoint(path, device)
    return ckpt.model, ckpt.tokenizer


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The JSON side only (cheap: used by the model picker)."""
    doc = _read_json(json_path(path))
    return {"config": doc.get("config", {}), "metadata": doc.get("metadata", {}),
            "kind": doc.get("kind", TRANSFORMER)}
