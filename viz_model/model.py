"""TinyTransformer: a small decoder (or encoder) whose every attention internal can be traced.

forward(ids, targets=None, *, key_padding_mask=None, trace=False, ...) -> ModelOutput(logits, loss, trace): after
ids and targets every option is named, so a call reads as nanoGPT's model(idx, targets) does.

A view that shows some layers traces only those: trace_layers=(2,) keeps layer 2's internals and runs every other
layer on the fast path (trace.layers[l] is None there); logits=False also skips the LM head and every block after
the last traced layer (nothing on screen depends on them: for GPT-2 small at T = 32 the head alone is 30 % of a pass).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from viz_model import masks, rope
from viz_model.attention import LayerTrace, MultiHeadAttention
from viz_model.config import ModelConfig
from viz_model.positional import alibi_bias, alibi_slopes, sinusoidal_encoding

IGNORE_INDEX = -100
ROPE_TABLE_LEN = 4096  # cos/sin rows precomputed; positions beyond are computed on demand (max_len may be 128k)


class TokenBatchNorm(nn.BatchNorm1d):
    """torch's BatchNorm1d on (B, T, d): each feature is normalised over all N x T positions of the batch
    (transposed to (B, d, T), BatchNorm1d's layout). Its statistics include padded positions: nothing masks
    them out, which is one reason transformers use LayerNorm. Train mode needs more than one value per
    feature (B x T > 1), else torch raises its own ValueError."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 3:
            return super().forward(x)
        return super().forward(x.transpose(1, 2)).transpose(1, 2)  # (B, d, T) -> normalise -> (B, T, d)


def make_norm(cfg: ModelConfig) -> nn.Module:
    """ln1 / ln2 / ln_f: LayerNorm (per token over d_model), BatchNorm (per feature over N x T) or RMSNorm."""
    if cfg.norm == "batchnorm":
        return TokenBatchNorm(cfg.d_model, eps=cfg.norm_eps)
    if cfg.norm == "rmsnorm":  # x / sqrt(mean(x^2) + eps) * weight, no mean subtraction, no bias (Llama)
        return nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
    return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)


class SwiGLU(nn.Module):
    """Llama's MLP: down(silu(gate(x)) * up(x)), d_ff the hidden width."""

    def __init__(self, d_model: int, d_ff: int, bias: bool):
        super().__init__()
        self.gate, self.up = nn.Linear(d_model, d_ff, bias=bias), nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))  # (B, T, d_ff) -> (B, T, d_model)


def make_mlp(cfg: ModelConfig) -> nn.Module:
    """gelu / gelu_tanh keep the keys mlp.0 / mlp.2; swiglu has mlp.gate, mlp.up, mlp.down."""
    if cfg.mlp == "swiglu":
        return SwiGLU(cfg.d_model, cfg.d_ff, cfg.mlp_bias)
    act = nn.GELU(approximate="tanh") if cfg.mlp == "gelu_tanh" else nn.GELU()
    return nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.mlp_bias), act,
                         nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.mlp_bias))


@dataclass
class Trace:
    embeddings: torch.Tensor            # (B, T, d_model) token embeddings (x sqrt(d_model) when embed_scale)
    positional: torch.Tensor            # (T, d_model) what was added for position (zeros for none/RoPE)
    layers: list[LayerTrace] = field(default_factory=list)  # one per block run; None where trace_layers left it out
    residual: list[torch.Tensor] = field(default_factory=list)  # (B, T, d_model) after each block run
    rope_angles: torch.Tensor | None = None  # (T, d_k/2) m * theta_i when RoPE is used
    positions: torch.Tensor | None = None    # (T,) absolute positions of this pass

    def stack(self, name: str = "probs") -> torch.Tensor:
        """One internal of every layer stacked, as float32 on the CPU: probs -> (L, B, H, T, T)."""
        if any(lt is None for lt in self.layers):
            raise ValueError("some layers were not traced (trace_layers): stack the traced ones from .layers.")
        return torch.stack([getattr(lt, name).detach().float().cpu() for lt in self.layers])

    def allowed(self, layer: int = 0) -> torch.Tensor:
        """Where a query may attend in `layer`: (B, H, T, Tk) bool, True = the mask lets it through."""
        lt = self.layers[layer]
        return torch.isfinite(lt.mask).expand(lt.probs.shape)


@dataclass
class ModelOutput:
    logits: torch.Tensor | None          # (B, T, vocab); None when forward(logits=False)
    loss: torch.Tensor | None = None
    trace: Trace | None = None
    cache: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # per layer (k, v), (B, n_kv_heads, T, d_k)


@contextlib.contextmanager
def eval_mode(model: nn.Module, training: bool = False) -> Iterator[nn.Module]:
    """The model in eval mode (or train mode with training=True) inside the block, its own mode restored after,
    also when the block raises."""
    was_training = model.training
    model.train(training)
    try:
        yield model
    finally:
        model.train(was_training)


class BlockOutput(NamedTuple):
    x: torch.Tensor                         # (B, T, d_model) the stream after the block
    trace: LayerTrace | None                # self-attention internals, when traced
    cache: tuple[torch.Tensor, torch.Tensor]  # self-attention (k, v) with the past, (B, n_kv_heads, Tk, d_k)
    cross_trace: LayerTrace | None = None   # cross-attention internals (cross blocks, when traced)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, pad_id: int, reduction: str = "mean") -> torch.Tensor:
    """Mean next-token cross-entropy; targets equal to pad_id or IGNORE_INDEX are left out. reduction="none": the
    (B, T) terms themselves (0 where left out), from the same kernel, so their mean is the loss to float rounding."""
    targets = targets.masked_fill(targets == pad_id, IGNORE_INDEX)  # loss mask: no pad targets
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX,
                           reduction=reduction)
    return loss if reduction != "none" else loss.view(targets.shape)


class Block(nn.Module):
    """One layer: self-attention, then the MLP. cross=True (a decoder layer of the encoder-decoder) puts
    cross-attention to the encoder output between them (ln_cross, cross). Each sublayer is x + f(LN(x)) (pre)
    or LN(x + f(x)) (post, the 2017 layout)."""

    def __init__(self, cfg: ModelConfig, cross: bool = False):
        super().__init__()
        self.pre, self.residual = cfg.norm_position == "pre", cfg.residual
        self.ln1 = make_norm(cfg)
        self.ln_cross = make_norm(cfg) if cross else None
        self.ln2 = make_norm(cfg)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, qkv=cfg.qkv, n_kv_heads=cfg.n_kv_heads,
                                       bias=cfg.attn_bias, out_bias=cfg.out_bias)
        self.cross = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, bias=cfg.attn_bias,
                                        out_bias=cfg.out_bias, cross=True) if cross else None
        self.mlp = make_mlp(cfg)
        self.drop = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()

    def forward(self, x: torch.Tensor, *, mask: torch.Tensor | None = None, rope_cs=None, past=None,
                trace: bool = False, scale: float | None = None, is_causal: bool = False, memory=None,
                memory_mask: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> BlockOutput:
        """x (B, T, d_model). mask: bool, broadcastable to (B, H, T, Tk) (None: every key, or SDPA's causal kernel
        with is_causal); rope_cs: RoPE's (cos, sin) or None; past: this layer's cached (k, v); trace: keep the
        attention internals; scale: the scores' factor (None: 1/sqrt(d_k)); memory: this layer's cross-attention
        K, V of the encoder output; memory_mask: the source padding; bias: ALiBi's (1, H, T, Tk) added to the
        self-attention scores (None without it)."""
        a, rec, kv = self.attn(self._in(x, self.ln1), mask=mask, rope=rope_cs, past=past, trace=trace, scale=scale,
                               is_causal=is_causal, bias=bias)
        x = self._out(x, a, self.ln1)
        cross_rec = None
        if self.cross is not None:
            c, cross_rec, _ = self.cross(self._in(x, self.ln_cross), mask=memory_mask, trace=trace, memory=memory)
            x = self._out(x, c, self.ln_cross)
        x = self._out(x, self.mlp(self._in(x, self.ln2)), self.ln2)
        return BlockOutput(x, rec, kv, cross_rec)

    def _in(self, x: torch.Tensor, norm: nn.Module) -> torch.Tensor:
        return norm(x) if self.pre else x  # what a sublayer reads: LN(x) pre, x post

    def _out(self, x: torch.Tensor, fx: torch.Tensor, norm: nn.Module) -> torch.Tensor:
        y = self._add(x, self.drop(fx))
        return y if self.pre else norm(y)  # (B, T, d_model)

    def _add(self, x: torch.Tensor, fx: torch.Tensor) -> torch.Tensor:
        return x + fx if self.residual else fx  # (B, T, d_model); residual=False: no bypass, only f(...)


class SequenceModel(nn.Module):
    """What TinyTransformer and the encoder-decoder share: the initialisation, token embeddings plus positions
    (`embed`), the RoPE and sinusoidal tables and the self-attention mask. A subclass sets `config`, `tok_emb`
    and `drop`, and calls `_position_tables()` where the model registered its buffers before."""

    config: ModelConfig

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    @property
    def device(self) -> torch.device:
        return self.tok_emb.weight.device

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- positions ------------------------------------------------------------------------------
    def _position_tables(self) -> None:
        cfg = self.config
        if cfg.pos_encoding == "sinusoidal":  # config caps this at 8192 x 1024
            self.register_buffer("pe_table", sinusoidal_encoding(cfg.max_len, cfg.d_model), persistent=False)
        if cfg.pos_encoding == "rope":
            # seq_len=max_len as before; only the first ROPE_TABLE_LEN rows are kept (the rest on demand)
            cos, sin = self._rope_tables(torch.arange(min(cfg.max_len, ROPE_TABLE_LEN)), cfg.max_len)
            self.register_buffer("rope_cos", cos, persistent=False)  # (min(max_len, 4096), d_k/2)
            self.register_buffer("rope_sin", sin, persistent=False)
        if cfg.pos_encoding == "alibi":  # fixed, not learned: kept out of the state dict like the tables above
            self.register_buffer("alibi_slopes", alibi_slopes(cfg.n_heads).float(), persistent=False)  # (H,)

    def position_bias(self, positions: torch.Tensor, n_keys: int | None = None) -> torch.Tensor | None:
        """ALiBi's -m_h |i - j| for queries at `positions` (T,) and keys 0..n_keys-1 (default: the last position + 1,
        i.e. the queries after a KV cache): (1, H, T, n_keys); None for every other position method."""
        if self.config.pos_encoding != "alibi":
            return None
        n_keys = int(positions.max()) + 1 if n_keys is None else n_keys
        keys = torch.arange(n_keys, device=self.device)
        return alibi_bias(self.alibi_slopes, positions.to(self.device), keys)[None]

    def _rope_tables(self, positions: torch.Tensor, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.config
        freqs, factor = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=seq_len)
        return rope.rope_cos_sin(positions.cpu(), freqs, factor)

    def rope_cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin (T, d_k/2) for these positions; cached table when possible, else computed in float64."""
        end = int(positions.max()) + 1
        by_length = rope.scaling_row((self.config.rope_scaling or {}).get("type")).by_length  # dynamic NTK
        if end <= min(self.config.max_len, self.rope_cos.shape[0]) and not by_length:
            return self.rope_cos[positions], self.rope_sin[positions]
        cos, sin = self._rope_tables(positions, seq_len=end)
        return cos.to(self.device), sin.to(self.device)

    def _current_inv_freq(self, seq_len: int) -> torch.Tensor:
        cfg = self.config
        return rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=seq_len)[0]

    def positional_input(self, positions: torch.Tensor, table: nn.Embedding | None = None) -> torch.Tensor:
        """What is added to the token embeddings for position: (T, d_model). table: the learned positions
        (default self.pos_emb; the encoder-decoder has one per side)."""
        cfg = self.config
        if cfg.pos_encoding == "learned":
            if int(positions.max()) >= cfg.max_len:
                raise ValueError(
                    f"this model learned positions 0..{cfg.max_len - 1} only; "
                    f"a learned table cannot go to position {int(positions.max())}."
                )
            return (self.pos_emb if table is None else table)(positions)
        if cfg.pos_encoding == "sinusoidal":
            end = int(positions.max()) + 1
            table = self.pe_table if end <= cfg.max_len else sinusoidal_encoding(end, cfg.d_model).to(self.device)
            return table[positions]
        return torch.zeros(len(positions), cfg.d_model, device=self.device)

    def embed(self, ids: torch.Tensor, positions: torch.Tensor, table: nn.Embedding | None = None):
        """ids (B, T) at positions (T,) -> (token embeddings, positional input, the stream entering the first
        block, RoPE's (cos, sin) or None)."""
        emb = self.tok_emb(ids)  # (B, T, d_model)
        if self.config.embed_scale:
            emb = emb * math.sqrt(self.config.d_model)  # the paper's scaling (GPT-2 and Llama do not scale)
        pos = self.positional_input(positions, table)  # (T, d_model)
        x = self.drop(emb + pos)
        rope_cs = self.rope_cos_sin(positions) if self.config.pos_encoding == "rope" else None
        return emb, pos, x, rope_cs

    def _mask(self, T, past_len, key_padding_mask, attn_mask):
        """Boolean mask broadcastable to (B, H, T, past_len+T), and whether it is exactly causal."""
        Tk, kind = past_len + T, self.config.mask
        if attn_mask is None and key_padding_mask is None and past_len == 0 and kind in ("causal", "bidirectional"):
            return (None, kind == "causal" and T > 1)  # fast path: SDPA's built-in causal kernel
        if attn_mask is None:
            attn_mask = masks.model_mask(self.config, T, past_len, self.device)  # (T, Tk): the config's kind
        elif attn_mask.shape != (T, Tk):
            raise ValueError(f"the attention mask must be {T}x{Tk}, got {tuple(attn_mask.shape)}.")
        attn_mask = attn_mask.to(self.device)
        if key_padding_mask is None:
            if attn_mask.all():
                return None, False
            exact_causal = past_len == 0 and bool((attn_mask == masks.causal_mask(T, self.device)).all())
            return masks.combine(attn_mask), exact_causal
        return masks.combine(attn_mask, key_padding_mask.to(self.device)), False


class TinyTransformer(SequenceModel):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = cfg = config
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model) if cfg.pos_encoding == "learned" else None
        self._position_tables()
        self.drop = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = make_norm(cfg) if cfg.norm_position == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight  # weight tying: one matrix for input and output

    # -- forward --------------------------------------------------------------------------------
    def forward(
        self,
        ids: torch.Tensor,                              # (B, T) token ids
        targets: torch.Tensor | None = None,            # (B, T) next-token ids, -100 / pad ignored
        *,                                              # the rest by name: model(ids, targets, trace=True)
        key_padding_mask: torch.Tensor | None = None,   # (B, T[past+T]) True = real token
        trace: bool = False,                            # record every layer's internals (out.trace)
        attn_mask: torch.Tensor | None = None,          # (T, Tk) bool override of the config's mask
        scale_scores: bool = True,                      # False: drop the 1/sqrt(d_k) factor
        temperature: float = 1.0,                       # divides the scores before softmax
        past: list[tuple[torch.Tensor, torch.Tensor]] | None = None,  # KV cache from a previous call
        use_cache: bool = False,
        trace_layers: Collection[int] | None = None,    # trace only these layers (implies trace); the rest: fast path
        logits: bool = True,                            # False: no LM head, no block after the last traced one
    ) -> ModelOutput:
        cfg = self.config
        traced = self._traced_layers(trace, trace_layers)
        trace = trace or trace_layers is not None
        if not logits and targets is not None:
            raise ValueError("a loss needs the logits: pass logits=True with targets.")
        n_run = max(traced) + 1 if not logits and traced else len(self.blocks)
        if ids.ndim == 1:
            ids = ids[None]
        B, T = ids.shape
        if T == 0:
            raise ValueError("the input has no tokens.")
        if temperature <= 0:
            raise ValueError(f"attention temperature must be positive, got {temperature}.")
        past_len = past[0][0].shape[2] if past else 0
        positions = torch.arange(past_len, past_len + T, device=self.device)  # (T,)

        emb, pos, x, rope_cs = self.embed(ids, positions)
        bias = self.position_bias(positions, past_len + T)  # ALiBi from absolute positions, also after a cache

        mask, is_causal = self._mask(T, past_len, key_padding_mask, attn_mask)
        scale = (1.0 / math.sqrt(cfg.d_k) if scale_scores else 1.0) / temperature

        record = Trace(embeddings=emb, positional=pos, positions=positions) if trace else None
        if record is not None and rope_cs is not None:
            record.rope_angles = rope.rope_angles(positions.cpu(), self._current_inv_freq(past_len + T))
        cache = []
        for i, block in enumerate(self.blocks[:n_run]):
            x, layer, kv, _ = block(x, mask=mask, rope_cs=rope_cs, past=past[i] if past else None, trace=i in traced,
                                    scale=scale, is_causal=is_causal, bias=bias)
            cache.append(kv)
            if record is not None:
                record.layers.append(layer)
                record.residual.append(x)
        if not logits:
            return ModelOutput(None, None, record, cache if use_cache else None)
        out = self.head(self.ln_f(x))  # (B, T, vocab)

        loss = None if targets is None else lm_loss(out, targets, cfg.pad_id)
        return ModelOutput(out, loss, record, cache if use_cache else None)

    def _traced_layers(self, trace: bool, trace_layers: Collection[int] | None) -> frozenset[int]:
        """Which blocks record their internals: every one with trace=True, else those in trace_layers."""
        n = len(self.blocks)
        if trace_layers is None:
            return frozenset(range(n)) if trace else frozenset()
        picked = frozenset(int(i) for i in trace_layers)
        if any(not 0 <= i < n for i in picked):
            raise ValueError(f"trace_layers must be layer numbers 0..{n - 1}, got {sorted(picked)}.")
        return picked
