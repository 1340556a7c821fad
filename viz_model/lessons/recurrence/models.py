"""The models compared: an RNN, an LSTM and a transformer of about the same parameter count (built for
the timing), and the three shipped ones trained on the recall task."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from viz_model import ASSETS_DIR, checkpoint
from viz_model.checkpoint import TRANSFORMER, Checkpoint
from viz_model.config import ModelConfig
from viz_model.data import TASK_LABELS
from viz_model.model import TinyTransformer
from viz_model.rnn import LSTM, RECURRENT_KINDS, RNN, RecurrentLM

KINDS = (RNN, LSTM, TRANSFORMER)  # the three models the lesson sets side by side (rows of checkpoint.MODEL_KINDS)


KIND_NAMES = {k: checkpoint.MODEL_KINDS[k].short for k in KINDS}


Progress = Callable[[float], None] | None


# What the page measures: the timed models (comparable_models), the recall inputs and the sliders' values.
D_MODEL, TRANSFORMER_LAYERS, RNN_LAYERS = 64, 2, 1


VOCAB, BATCH, REPEATS = 256, 8, 3


LAYERS = {RNN: RNN_LAYERS, LSTM: RNN_LAYERS, TRANSFORMER: TRANSFORMER_LAYERS}


def name(kind: str) -> str:
    return KIND_NAMES.get(kind, kind)


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _np(x) -> np.ndarray:
    return x.detach().float().cpu().numpy()


def _recurrent_hidden(kind: str, target_params: int, vocab_size: int, n_layers: int) -> int:
    """The hidden width whose RecurrentLM has the parameter count closest to target_params."""
    gates = 4 if kind == LSTM else 1
    def count(h: int) -> int:
        return 2 * vocab_size * h + n_layers * gates * (2 * h * h + 2 * h)  # embedding + head + cells
    return min(range(4, 1025, 4), key=lambda h: abs(count(h) - target_params))


def comparable_models(vocab_size: int = 256, d_model: int = 64, n_layers: int = 2, max_len: int = 1024,
                      rnn_layers: int = 1, seed: int = 0) -> dict[str, nn.Module]:
    """A transformer (d_model, n_layers, RoPE) and an RNN and an LSTM sized to about its parameter count."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab_size, d_model=d_model, n_heads=max(1, d_model // 16), n_layers=n_layers,
                      d_ff=4 * d_model, max_len=max_len, tie_weights=False)
    transformer = TinyTransformer(cfg)
    target = transformer.num_params()
    return {kind: RecurrentLM(kind, vocab_size, _recurrent_hidden(kind, target, vocab_size, rnn_layers), rnn_layers)
            for kind in RECURRENT_KINDS} | {TRANSFORMER: transformer}


def shipped_path(kind: str):
    """Where the shipped recall model of this kind lives (assets/models/recurrence/KIND.safetensors)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    return ASSETS_DIR / "models" / "recurrence" / f"{kind}.safetensors"


def load_shipped(device: str | torch.device = "cpu", read_only: bool = False) -> dict[str, Checkpoint]:
    """The three shipped recall models; `read_only` freezes their weights (a server shares them with every user)."""
    models = {kind: checkpoint.load_checkpoint(shipped_path(kind), device) for kind in KINDS}
    for ckpt in models.values() if read_only else ():
        ckpt.model.requires_grad_(False)
    return models


def trained_text(meta: dict) -> str:
    return (f"These models were trained for {meta.get('steps', '?')} steps (seed {meta.get('seed', '?')}) on "
            f"the task *{TASK_LABELS['recall']}*. On the Train page that task trains an RNN, an LSTM or a "
            "transformer in front of you: pick the model kind, or run all three side by side under "
            "*Compare setups → RNN vs LSTM vs transformer*.")
