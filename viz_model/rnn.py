"""RecurrentLM: a small RNN or LSTM language model on torch's own nn.RNN / nn.LSTM, trainable by the same Trainer.

forward(ids, key_padding_mask=None, targets=None, trace=False) -> ModelOutput(logits, loss, trace), like
TinyTransformer, so training, evaluation and checkpoints treat both alike.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from viz_model.config import MAX_D_MODEL, MAX_LAYERS, MAX_LEN, MAX_VOCAB, _check_int
from viz_model.model import IGNORE_INDEX, ModelOutput, Trace

RNN, LSTM = "rnn", "lstm"  # the recurrent kinds: rows of checkpoint.MODEL_KINDS
RECURRENT_KINDS = (RNN, LSTM)
_MODULES = {RNN: nn.RNN, LSTM: nn.LSTM}


@dataclass
class RecurrentConfig:
    kind: str = RNN                # RNN (tanh cell) | LSTM
    vocab_size: int = 256
    d_model: int = 64              # embedding width = hidden width of every layer
    n_layers: int = 1              # stacked recurrent layers
    max_len: int = MAX_LEN         # no positional table: only the longest input the app will feed it
    tie_weights: bool = False      # output projection shares the token-embedding matrix
    pad_id: int = 0                # id of <pad>; targets equal to it (or -100) are ignored by the loss

    def __post_init__(self) -> None:
        if self.kind not in RECURRENT_KINDS:
            raise ValueError(f"a recurrent model's kind must be one of {RECURRENT_KINDS}, got {self.kind!r}.")
        _check_int("vocab_size", self.vocab_size, 2, MAX_VOCAB)
        _check_int("d_model", self.d_model, 1, MAX_D_MODEL)
        _check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        _check_int("max_len", self.max_len, 1, MAX_LEN)
        _check_int("pad_id", self.pad_id, 0, self.vocab_size - 1)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecurrentConfig":
        if not isinstance(data, dict):
            raise ValueError("config must be a JSON object.")
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}.")
        return cls(**data)


class RecurrentLM(nn.Module):
    """Embedding -> n_layers single-layer torch RNN/LSTM modules (kept apart so each layer's states and W_hh
    can be read) -> linear head. Right padding needs no mask: the recurrence only runs forward."""

    def __init__(self, kind: str = RNN, vocab_size: int = 256, d_model: int = 64, n_layers: int = 1,
                 config: RecurrentConfig | None = None, **options: Any):
        super().__init__()
        self.config = cfg = config or RecurrentConfig(kind, vocab_size, d_model, n_layers, **options)
        self.kind = cfg.kind
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(_MODULES[cfg.kind](cfg.d_model, cfg.d_model, batch_first=True)
                                    for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight

    @classmethod
    def from_config(cls, config: RecurrentConfig) -> "RecurrentLM":
        return cls(config=config)

    @property
    def device(self) -> torch.device:
        return self.tok_emb.weight.device

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def weight_hh(self, layer: int = 0) -> torch.Tensor:
        """W_hh of one layer: (H, H) for an RNN, (4H, H) for an LSTM (input, forget, cell, output gates)."""
        if not 0 <= layer < self.config.n_layers:
            raise ValueError(f"this model has layers 0..{self.config.n_layers - 1}, not {layer}.")
        return self.layers[layer].weight_hh_l0

    def forward(
        self,
        ids: torch.Tensor,                              # (B, T) token ids
        key_padding_mask: torch.Tensor | None = None,   # accepted for the common call; right padding is harmless
        targets: torch.Tensor | None = None,            # (B, T) next-token ids, pad / -100 ignored
        trace: bool = False,
        **_: Any,
    ) -> ModelOutput:
        if ids.ndim == 1:
            ids = ids[None]
        B, T = ids.shape
        if T == 0:
            raise ValueError("the input has no tokens.")
        emb = self.tok_emb(ids)  # (B, T, d_model)
        x, states = emb, []
        for rnn in self.layers:
            x, _ = rnn(x)        # (B, T, d_model): h_t of this layer for every t, computed one step after another
            states.append(x)
        logits = self.head(x)    # (B, T, vocab)
        loss = None
        if targets is not None:
            targets = targets.masked_fill(targets == self.config.pad_id, IGNORE_INDEX)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                   ignore_index=IGNORE_INDEX)
        record = None
        if trace:  # no attention to record: the layers' hidden states stand where the residual stream would
            zeros = torch.zeros(T, self.config.d_model, device=self.device)
            record = Trace(embeddings=emb, positional=zeros, residual=states,
                           positions=torch.arange(T, device=self.device))
        return ModelOutput(logits, loss, record, None)


__all__ = ["LSTM", "RECURRENT_KINDS", "RNN", "RecurrentConfig", "RecurrentLM"]
