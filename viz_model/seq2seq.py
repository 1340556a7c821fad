"""An encoder-decoder transformer (the 2017 translation model) whose three attention kinds can be traced.

    model = Seq2SeqTransformer(Seq2SeqConfig(vocab_size=V, n_encoder_layers=2, n_layers=2))
    out = model(src, tgt, targets=..., trace=True)      # out.trace.encoder / .decoder / .cross: LayerTrace lists
    result = translate(model, tokenizer, "the cat sat on the mat")   # .text, .tokens, .cross_attention

Encoder: bidirectional self-attention over the source (source padding masked). Decoder: causal self-attention,
then cross-attention with Q from the decoder and K, V from the encoder output (no causal mask, source padding
masked), then the MLP. Decoding encodes the source once, projects each layer's cross-attention K and V once,
and keeps a KV cache for the decoder's self-attention.

One stack: an encoder layer is model.Block, a decoder layer is Block(cfg, cross=True) (cross-attention is
attention.MultiHeadAttention's cross mode), the embedding and positions are model.SequenceModel's, and
decode_steps drives generate.decode_loop, the sampling loop of generate().
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from viz_model import masks
from viz_model.attention import LayerTrace
from viz_model.config import ModelConfig, _check_int
from viz_model.generate import GenStep, Sampling, decode_loop, last_rows
from viz_model.model import IGNORE_INDEX, Block, SequenceModel, eval_mode, lm_loss, make_norm

KV = tuple[torch.Tensor, torch.Tensor]


@dataclass
class Seq2SeqConfig(ModelConfig):
    """A ModelConfig for both stacks: n_layers is the decoder's depth, n_encoder_layers the encoder's.

    Source and target share one vocabulary, one embedding matrix and (tie_weights) the output projection.
    `causal` describes the decoder's self-attention and must stay True; the encoder is always bidirectional.
    """

    n_encoder_layers: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_int("n_encoder_layers", self.n_encoder_layers, 1, 48)
        if not self.causal:
            raise ValueError("an encoder-decoder's decoder predicts left to right: causal must be True.")
        if self.rope_scaling is not None:
            raise ValueError("the encoder-decoder uses plain RoPE (no rope_scaling).")


# -- outputs ----------------------------------------------------------------------------------------------
@dataclass
class Seq2SeqTrace:
    encoder: list[LayerTrace] = field(default_factory=list)  # encoder self-attention, (B, H, T_src, T_src)
    decoder: list[LayerTrace] = field(default_factory=list)  # decoder self-attention, (B, H, T_tgt, T_past+T_tgt)
    cross: list[LayerTrace] = field(default_factory=list)    # cross-attention, (B, H, T_tgt, T_src)
    encoder_residual: list[torch.Tensor] = field(default_factory=list)  # (B, T_src, d_model) after each block
    decoder_residual: list[torch.Tensor] = field(default_factory=list)  # (B, T_tgt, d_model) after each block


@dataclass
class EncoderState:
    """What decoding needs from the source, computed once: the memory and each layer's cross K/V."""

    memory: torch.Tensor            # (B, T_src, d_model) encoder output
    padding: torch.Tensor           # (B, T_src) True = real source token
    cross_kv: list[KV]              # per decoder layer: K, V (B, H, T_src, d_k)
    trace: Seq2SeqTrace | None = None  # encoder layers only, when traced

    @property
    def cross_mask(self) -> torch.Tensor | None:
        return None if bool(self.padding.all()) else self.padding[:, None, None, :]  # (B, 1, 1, T_src)


@dataclass
class Seq2SeqOutput:
    logits: torch.Tensor                 # (B, T_tgt, vocab)
    loss: torch.Tensor | None = None
    trace: Seq2SeqTrace | None = None
    cache: list[KV] | None = None        # decoder self-attention (k, v) per layer


SEQ2SEQ = "seq2seq"  # the kind: a row of checkpoint.MODEL_KINDS


# -- the model --------------------------------------------------------------------------------------------
class Seq2SeqTransformer(SequenceModel):
    kind = SEQ2SEQ  # the checkpoint JSON's "kind" (checkpoint.MODEL_KINDS)

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise ValueError("an encoder-decoder needs a Seq2SeqConfig (a ModelConfig with n_encoder_layers).")
        self.config = cfg = config
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)  # shared by source, target and the output
        if cfg.pos_encoding == "learned":  # one table per side
            self.src_pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
            self.tgt_pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self._position_tables()  # RoPE in both stacks' self-attention; cross-attention compares two sequences
        self.drop = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()
        self.encoder = nn.ModuleList(Block(cfg) for _ in range(cfg.n_encoder_layers))  # bidirectional: by mask
        self.ln_enc = make_norm(cfg) if cfg.norm_position == "pre" else nn.Identity()
        self.decoder = nn.ModuleList(Block(cfg, cross=True) for _ in range(cfg.n_layers))
        self.ln_f = make_norm(cfg) if cfg.norm_position == "pre" else nn.Identity()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)
        if cfg.tie_weights:
            self.head.weight = self.tok_emb.weight

    def _stream(self, ids: torch.Tensor, start: int, side: str):
        """(the stream entering the first block, RoPE's cos/sin) for the source or target ids at start.."""
        T = ids.shape[1]
        if start + T > self.config.max_len:
            raise ValueError(f"the {side} has {start + T} tokens; this model reads at most {self.config.max_len}.")
        table = getattr(self, "src_pos_emb" if side == "source" else "tgt_pos_emb", None)
        _, _, x, rope_cs = self.embed(ids, torch.arange(start, start + T, device=self.device), table)
        return x, rope_cs

    def encode(self, src: torch.Tensor, src_padding_mask: torch.Tensor | None = None,
               trace: bool = False) -> EncoderState:
        """Run the encoder once; project every decoder layer's cross-attention K and V once."""
        src = src[None] if src.ndim == 1 else src  # (B, T_src)
        if src.shape[1] == 0:
            raise ValueError("the source has no tokens.")
        padding = (src != self.config.pad_id) if src_padding_mask is None else src_padding_mask.to(self.device)
        if not bool(padding.any(-1).all()):
            raise ValueError("every source sentence needs at least one real (non-padding) token.")
        x, rope_cs = self._stream(src, 0, "source")
        T = src.shape[1]
        mask = None if bool(padding.all()) else masks.combine(masks.bidirectional_mask(T, self.device), padding)
        record = Seq2SeqTrace() if trace else None
        bias = self.position_bias(torch.arange(T, device=self.device))  # ALiBi (symmetric |i - j|) or None
        for block in self.encoder:
            x, layer, _, _ = block(x, mask=mask, rope_cs=rope_cs, trace=trace, bias=bias)  # (B, T_src, d_model)
            if record is not None:
                record.encoder.append(layer)
                record.encoder_residual.append(x)
        memory = self.ln_enc(x)
        return EncoderState(memory, padding, [blk.cross.memory_kv(memory) for blk in self.decoder], record)

    def decode(self, tgt: torch.Tensor, state: EncoderState, *, tgt_padding_mask: torch.Tensor | None = None,
               targets: torch.Tensor | None = None, past: list[KV] | None = None, trace: bool = False,
               use_cache: bool = False) -> Seq2SeqOutput:
        """Decoder over `tgt` (after `past` cached positions), attending to the encoded source in `state`."""
        tgt = tgt[None] if tgt.ndim == 1 else tgt  # (B, T_tgt)
        if tgt.shape[1] == 0:
            raise ValueError("the target has no tokens (it starts with <bos>).")
        past_len = past[0][0].shape[2] if past else 0
        x, rope_cs = self._stream(tgt, past_len, "target")
        mask, is_causal = self._mask(tgt.shape[1], past_len, tgt_padding_mask, None)  # causal, target padding
        record = None
        if trace:  # the encoder's layers (when it was traced) come first; the lists are new, never shared
            enc = state.trace or Seq2SeqTrace()
            record = Seq2SeqTrace(list(enc.encoder), encoder_residual=list(enc.encoder_residual))
        cache = []
        bias = self.position_bias(torch.arange(past_len, past_len + tgt.shape[1], device=self.device))  # or None
        for i, block in enumerate(self.decoder):
            x, rec, kv, crec = block(x, mask=mask, rope_cs=rope_cs, past=past[i] if past else None, trace=trace,
                                     is_causal=is_causal, memory=state.cross_kv[i], memory_mask=state.cross_mask,
                                     bias=bias)
            cache.append(kv)
            if record is not None:
                record.decoder.append(rec)
                record.cross.append(crec)
                record.decoder_residual.append(x)
        logits = self.head(self.ln_f(x))  # (B, T_tgt, vocab)
        loss = None if targets is None else lm_loss(logits, targets, self.config.pad_id)
        return Seq2SeqOutput(logits, loss, record, cache if use_cache else None)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_padding_mask: torch.Tensor | None = None,
                tgt_padding_mask: torch.Tensor | None = None, targets: torch.Tensor | None = None,
                trace: bool = False) -> Seq2SeqOutput:
        """Teacher forcing: encode src, decode tgt (<bos> y1 ..) in one pass; targets (y1 .. <eos>) give the loss.

        src_padding_mask defaults to src != pad_id (True = real token)."""
        state = self.encode(src, src_padding_mask, trace)
        return self.decode(tgt, state, tgt_padding_mask=tgt_padding_mask, targets=targets, trace=trace)


# -- guided alignment -------------------------------------------------------------------------------------
def guided_head(config: Seq2SeqConfig) -> tuple[int, int]:
    """(decoder layer, head) that guided-alignment training supervises: head 0 of the last decoder layer."""
    return config.n_layers - 1, 0


def guided_alignment_loss(cross_probs: torch.Tensor, alignment: torch.Tensor) -> torch.Tensor:
    """Guided alignment (Garg et al. 2019, "Jointly Learning to Align and Translate"): the mean over target rows
    of -log(attention on the source word that row translates). The model's own translation loss never asks a
    head to attend to the aligned word; this extra term does, for one head.

    cross_probs: (B, T_tgt, T_src) one head's cross-attention; alignment: (B, T_tgt) source indices,
    IGNORE_INDEX on rows that translate no source word (the row predicting <eos>, padding)."""
    valid = alignment != IGNORE_INDEX  # (B, T_tgt)
    picked = cross_probs.float().gather(-1, alignment.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, T_tgt)
    return -(picked.clamp_min(1e-9).log() * valid).sum() / valid.sum().clamp_min(1)


# -- decoding ---------------------------------------------------------------------------------------------
@dataclass
class DecodeStep:
    step: GenStep                      # the Generate page's step: token, p, filtered p, logprob, self-attention
    cross_attention: torch.Tensor | None  # (L, H, T_src): the new token's query over the source


def decode_steps(model: Seq2SeqTransformer, src_ids: Sequence[int] | torch.Tensor, *,
                 strategy: Sampling | str = "greedy", max_new_tokens: int = 64, seed: int = 0,
                 use_cache: bool = True, reuse_encoder: bool | None = None, attention: bool = True,
                 tokenizer=None, bos_id: int = 2, eos_id: int = 3) -> Iterator[DecodeStep]:
    """Yield one step per target token (the last one carries stop_reason 'eos' | 'length' | 'context').

    use_cache: decoder self-attention KV cache (one new token per step). reuse_encoder (default: use_cache):
    the source is encoded once and its cross K/V reused; False re-encodes the source at every step.
    """
    reuse = use_cache if reuse_encoder is None else reuse_encoder
    if use_cache and not reuse:
        raise ValueError("a decoder KV cache needs the encoder output kept (reuse_encoder=True).")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}.")
    src = torch.as_tensor([int(i) for i in (src_ids.flatten().tolist() if torch.is_tensor(src_ids) else src_ids)],
                          device=model.device)[None]  # (1, T_src)
    limit = min(max_new_tokens, model.config.max_len - 1)  # <bos> takes target position 0
    with torch.no_grad():
        state = model.encode(src) if reuse else None

    def forward(feed: list[int], cache: list[KV] | None) -> Seq2SeqOutput:  # the naive decoder re-encodes
        return model.decode(torch.tensor([feed], device=model.device), state if reuse else model.encode(src),
                            past=cache, trace=attention, use_cache=use_cache)

    def stop(index: int, seq: list[int], token_id: int) -> str | None:
        if token_id == eos_id:
            return "eos"
        return "length" if index == max_new_tokens - 1 else ("context" if index == limit - 1 else None)

    for step, out in decode_loop(forward, [bos_id], stop, strategy=strategy, steps=limit, seed=seed,
                                 use_cache=use_cache, layers=(lambda o: o.trace.decoder) if attention else None,
                                 tokenizer=tokenizer):
        yield DecodeStep(step, last_rows(out.trace.cross) if attention else None)


@torch.no_grad()
def greedy_batch(model: Seq2SeqTransformer, sources: Sequence[Sequence[int]], *, max_new_tokens: int = 64,
                 bos_id: int = 2, eos_id: int = 3) -> list[list[int]]:
    """Greedy translations of many sources at once (encoder once, cached decoder); each stops at its <eos>."""
    pad = model.config.pad_id
    src = torch.full((len(sources), max(len(s) for s in sources)), pad, dtype=torch.long)
    for i, s in enumerate(sources):
        src[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    with eval_mode(model):
        state = model.encode(src.to(model.device))  # (B, T_src) right-padded: padding masked in both attentions
        feed = torch.full((len(sources), 1), bos_id, dtype=torch.long, device=model.device)  # (B, 1)
        out_ids, cache = [], None
        done = torch.zeros(len(sources), dtype=torch.bool, device=model.device)
        for _ in range(min(max_new_tokens, model.config.max_len - 1)):
            out = model.decode(feed, state, past=cache, use_cache=True)
            feed = out.logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            out_ids.append(feed[:, 0])
            done |= feed[:, 0] == eos_id
            cache = out.cache
            if bool(done.all()):
                break
    rows = torch.stack(out_ids, 1).tolist() if out_ids else [[] for _ in sources]  # (B, steps)
    return [row[: row.index(eos_id)] if eos_id in row else row for row in rows]


@dataclass
class Translation:
    text: str                         # the generated target words joined by spaces (no <bos>/<eos>)
    tokens: list[str]                 # the generated target tokens, without the final <eos>
    token_ids: list[int]
    source_tokens: list[str]          # labels of the source as encoded (words as typed, then <eos>)
    source_ids: list[int]
    cross_attention: torch.Tensor     # (L, H, T_tgt, T_src): row j is the query that produced tokens[j]
    steps: list[DecodeStep]           # every step, including the one that chose <eos>
    stop_reason: str                  # 'eos' | 'length' | 'context'
    unknown: list[str]                # source words the tokenizer does not know (fed as <unk>)
    seconds: float                    # wall time of the whole decode


def encode_source(model: Seq2SeqTransformer, tokenizer, text: str):
    """(ids with <eos> last, labels, unknown words) for a source sentence; ValueError when empty or too long."""
    from viz_model.tokenizer import encode

    enc = encode(tokenizer, text)
    if not enc.ids:
        raise ValueError("there is nothing to translate: type a sentence.")
    ids = [*enc.ids, tokenizer.token_to_id("<eos>")]
    if len(ids) > model.config.max_len:
        raise ValueError(f"the sentence has {len(ids)} tokens with <eos>; this model reads at most "
                         f"{model.config.max_len}. Shorten it.")
    return ids, [*enc.tokens, "<eos>"], enc.unknown


def translate(model: Seq2SeqTransformer, tokenizer, text: str, max_new_tokens: int = 64, use_cache: bool = True,
              strategy: Sampling | str = "greedy", seed: int = 0) -> Translation:
    """Translate `text` token by token (greedy unless a Sampling is given), keeping the cross-attention rows."""
    ids, labels, unknown = encode_source(model, tokenizer, text)
    with eval_mode(model):
        t0 = time.perf_counter()
        steps = list(decode_steps(model, ids, strategy=strategy, max_new_tokens=max_new_tokens, seed=seed,
                                  use_cache=use_cache, tokenizer=tokenizer, bos_id=tokenizer.token_to_id("<bos>"),
                                  eos_id=tokenizer.token_to_id("<eos>")))
        seconds = time.perf_counter() - t0
    kept = steps[:-1] if steps[-1].step.stop_reason == "eos" else steps
    cross = (torch.stack([d.cross_attention for d in kept], dim=2) if kept  # (L, H, T_tgt, T_src)
             else torch.zeros(model.config.n_layers, model.config.n_heads, 0, len(ids)))
    tokens = [d.step.token for d in kept]
    return Translation(" ".join(tokens), tokens, [d.step.token_id for d in kept], labels, ids, cross, steps,
                       steps[-1].step.stop_reason, unknown, seconds)


__all__ = ["DecodeStep", "EncoderState", "Seq2SeqConfig", "Seq2SeqOutput", "Seq2SeqTrace", "Seq2SeqTransformer",
           "Translation", "decode_steps", "encode_source", "greedy_batch", "guided_alignment_loss", "guided_head",
           "translate"]
