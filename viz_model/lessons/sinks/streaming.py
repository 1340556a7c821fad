"""A sliding KV cache on a text longer than the context (StreamingLLM): the window alone, the window plus
the first tokens kept as sinks, and recomputing the window for every token; the loss of each over the stream."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import rope
from viz_model.lessons.common import Check
from viz_model.lessons.sinks.settings import (
    BAD_WINDOW,
    MAX_SINKS,
    MIN_WINDOW,
    NO_STREAM_POSITIONS,
    SHORT_STREAM,
    STREAMS,
    streams_positions,
)
from viz_model.lessons.sinks.text import BATCH, POS_NAMES, check_model
from viz_model.model import TinyTransformer, eval_mode


def _unit_rope(model: TinyTransformer, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (n, d_k/2) of slots 0..n-1 without RoPE's attention factor: a pure rotation (the model's own keys
    carry the factor once already)."""
    cfg = model.config
    freqs = rope.inv_freq(cfg.d_k, cfg.rope_base, cfg.rope_scaling, seq_len=cfg.max_len)[0]
    cos, sin = rope.rope_cos_sin(torch.arange(n), freqs, 1.0)
    return cos.to(model.device), sin.to(model.device)


def _evict(t: torch.Tensor, sinks: Sequence[int]) -> torch.Tensor:
    """(B, H, n, d) -> (B, H, n - 1, d): row b drops slot sinks[b], the oldest entry after its sinks."""
    return torch.stack([torch.cat([t[b, :, :s], t[b, :, s + 1:]], 1) for b, s in enumerate(sinks)])


@torch.no_grad()
def stream_caches(model: TinyTransformer, ids: Sequence[int], window: int, sinks: Sequence[int],
                  progress: Callable[[float], None] | None = None) -> np.ndarray:
    """Per-token loss (len(sinks), N - 1) of a KV cache of at most `window` entries, one row per sinks count (0: the
    window alone), all in one batch: token t + 1 is predicted from token t with the cache, the cache keeps its
    first s entries and drops the oldest other one when full; keys are stored unrotated and rotated by their slot."""
    check_model(model)
    if not streams_positions(model):
        raise ValueError(NO_STREAM_POSITIONS.format(pos=POS_NAMES.get(model.config.pos_encoding, "its")))
    if not 2 <= window <= model.config.max_len or any(not 0 <= s < window - 1 for s in sinks):
        raise ValueError(BAD_WINDOW.format(lo=MIN_WINDOW, hi=model.config.max_len))
    B, x = len(sinks), torch.tensor(list(ids), device=model.device)
    cos_sin = _unit_rope(model, window + 1) if model.config.pos_encoding == "rope" else None
    store: list[tuple[torch.Tensor, torch.Tensor]] | None = None
    losses = torch.zeros(B, len(ids) - 1, dtype=torch.float64)
    with eval_mode(model):
        for t in range(len(ids) - 1):
            n = 0 if store is None else store[0][0].shape[2]
            past = None if store is None else [(_rotate(k, cos_sin, slice(0, n), 1), v) for k, v in store]
            out = model(x[t].expand(B, 1), past=past, use_cache=True)
            losses[:, t] = -torch.log_softmax(out.logits[:, -1].double(), -1)[:, x[t + 1]].cpu()
            new = [(_rotate(k[:, :, -1:], cos_sin, slice(n, n + 1), -1), v[:, :, -1:]) for k, v in out.cache]
            store = new if store is None else [(torch.cat([sk, nk], 2), torch.cat([sv, nv], 2))
                                               for (sk, sv), (nk, nv) in zip(store, new)]
            if n + 1 > window - 1:  # next step adds one: keep at most window - 1 cached entries
                store = [(_evict(k, sinks), _evict(v, sinks)) for k, v in store]
            if progress is not None and t % 64 == 0:
                progress(t / (len(ids) - 1))
    return losses.numpy()


def _rotate(k: torch.Tensor, cos_sin, slots: slice, sign: int) -> torch.Tensor:
    """Keys (B, H, n, d_k) rotated by +slot (sign 1) or back by -slot (sign -1); unchanged without RoPE."""
    if cos_sin is None:
        return k
    return rope.rotate_interleaved(k, cos_sin[0][slots], cos_sin[1][slots] * sign)


@torch.no_grad()
def stream_recompute(model: TinyTransformer, ids: Sequence[int], window: int) -> np.ndarray:
    """Per-token loss (N - 1,) recomputing the last `window` tokens from scratch for every prediction (positions
    0..window-1 each time): the prefix while the text is shorter, then the windows in batches."""
    check_model(model)
    if not 2 <= window <= model.config.max_len:
        raise ValueError(BAD_WINDOW.format(lo=MIN_WINDOW, hi=model.config.max_len))
    x = torch.tensor(list(ids), device=model.device)
    with eval_mode(model):
        head = min(window, len(ids) - 1)
        lp = torch.log_softmax(model(x[:head][None]).logits[0].double(), -1)
        out = [-lp[torch.arange(head), x[1: head + 1]]]
        windows = x.unfold(0, window, 1)[1: len(ids) - window]  # windows ending at t = window .. N-2
        targets = x[window + 1:]
        for i in range(0, len(windows), BATCH):
            lg = _last_logits(model, windows[i: i + BATCH]).double()
            out.append(-torch.log_softmax(lg, -1)[torch.arange(len(lg)), targets[i: i + BATCH]])
    return torch.cat(out).cpu().numpy()


def _last_logits(model: TinyTransformer, x: torch.Tensor) -> torch.Tensor:
    """The logits (B, V) of the last position only: the LM head on one position instead of all of them (at a
    vocabulary of 8,192 the head over every position was most of the recompute's time). The last block is traced
    for its output stream; the others run on the fast path."""
    out = model(x, trace_layers=(len(model.blocks) - 1,), logits=False)
    return model.head(model.ln_f(out.trace.residual[-1][:, -1]))


@torch.no_grad()
def full_losses(model: TinyTransformer, ids: Sequence[int]) -> np.ndarray:
    """Per-token loss of one ordinary forward pass (the reference a cache must equal when nothing is evicted)."""
    with eval_mode(model):
        x = torch.tensor([list(ids)], device=model.device)
        lp = torch.log_softmax(model(x).logits[0].double(), -1)
    return (-lp[torch.arange(len(ids) - 1), x[0, 1:]]).cpu().numpy()


@dataclass(frozen=True)
class StreamResult:
    window: int
    sinks: int
    losses: dict[str, np.ndarray]  # method -> per-token loss (N - 1,): "window", "sinks", "recompute"

    def perplexity(self, method: str) -> float:
        """Over the tokens predicted once the cache is full (before that the three methods are the same pass)."""
        return float(math.exp(self.losses[method][self.window - 1:].mean()))


def stream_experiment(model: TinyTransformer, ids: Sequence[int], window: int, sinks: int,
                      progress: Callable[[float], None] | None = None) -> StreamResult:
    if len(ids) <= window:
        raise ValueError(SHORT_STREAM.format(n=len(ids), w=window))
    if not 1 <= sinks <= MAX_SINKS:
        raise ValueError(f"Keep 1 to {MAX_SINKS} first tokens (0 is the window alone, shown beside it).")
    cached = stream_caches(model, ids, window, (0, sinks), progress)
    return StreamResult(window, sinks, {"window": cached[0], "sinks": cached[1],
                                        "recompute": stream_recompute(model, ids, window)})


def stream_key(ckpt, source: str, kind: str, n_tokens: int, window: int, sinks: int) -> tuple:
    """The cache key of one window's experiment, the same for the page and its class question."""
    return (str(ckpt.path), id(ckpt.model), source, kind, int(n_tokens), int(window), int(sinks))


def stream_rows(results: Sequence[StreamResult]) -> list[dict[str, object]]:
    return [{"window": r.window, "window alone": round(r.perplexity("window"), 2),
             f"window + {first_n(r.sinks)}": round(r.perplexity("sinks"), 2),
             "recompute": round(r.perplexity("recompute"), 2),
             "sinks vs window alone": f"{r.perplexity('sinks') / r.perplexity('window') - 1:+.1%}"} for r in results]


def stream_claims(model: TinyTransformer, ids: Sequence[int], sinks: int) -> list[Check]:
    """On the stream's first tokens, with a cache larger than the text: the cache alone, with sinks, and the
    recompute all equal one ordinary forward pass (nothing is evicted, slots are the positions)."""
    short = list(ids[: min(len(ids), 48, model.config.max_len)])
    ref = full_losses(model, short)
    cached = stream_caches(model, short, len(short), (0, min(sinks, len(short) - 2)))
    rec = stream_recompute(model, short, len(short))
    return [Check(float(np.abs(cached - ref).max()), 1e-4, CLAIM_CACHE.format(T=len(short))),
            Check(float(np.abs(rec - ref).max()), 1e-4, CLAIM_RECOMPUTE.format(T=len(short)))]


def stream_sentence(results: Sequence[StreamResult]) -> str:
    parts = []
    for r in results:
        w, s, c = (r.perplexity(m) for m in ("window", "sinks", "recompute"))
        gain = w / s - 1
        kept = first_n(r.sinks)
        verdict = (f"keeping {kept} lowers perplexity from {w:.1f} to {s:.1f} ({w / s:.2f}× lower)"
                   if gain > 0.02 else f"keeping {kept} makes no real difference ({w:.1f} vs {s:.1f})"
                   if gain > -0.02 else f"keeping {kept} makes it worse ({w:.1f} vs {s:.1f})")
        best = min(("the window alone", w), (f"the window + {kept}", s), ("recompute", c), key=lambda p: p[1])
        parts.append(f"window {r.window}: {verdict}; recompute gives {c:.1f}; lowest: {best[0]}.")
    return "Measured on this stream: " + " ".join(parts)


METHOD_CHOICES = ("the window alone", "the window + {kept}", "recomputing the window")


def stream_question(r: StreamResult, n_tokens: int, kind: str) -> tuple[str, list[str], list[int], str]:
    """The class question on the streaming view: (prompt, choices, correct indices, why from the numbers)."""
    prompt = (f"A KV cache of {r.window} tokens slides over {n_tokens} tokens of {STREAMS[kind]}. Which keeps "
              "perplexity lowest once it is full?")
    ppl = [r.perplexity(m) for m in ("window", "sinks", "recompute")]
    choices = [c.format(kept=first_n(r.sinks)) for c in METHOD_CHOICES]
    why = ("Perplexity measured now: " + ", ".join(f"{c} {p:.1f}" for c, p in zip(choices, ppl)) + ".")
    return prompt, choices, best_method(r), why


def first_n(n: int) -> str:
    return "the first token" if n == 1 else f"the first {n} tokens"


def best_method(r: StreamResult) -> list[int]:
    """Index of the lowest perplexity among (window alone, window + sinks, recompute); ties within 0.5 % all."""
    p = [r.perplexity(m) for m in ("window", "sinks", "recompute")]
    return [i for i, v in enumerate(p) if v <= min(p) * 1.005]


# -- what the page says ------------------------------------------------------------------------------------------
STREAM_TITLE = "Loss over the stream, three KV caches"
STREAM_INTRO = ("**The streaming experiment.** A held-out text {factor:g}× the context ({n} tokens) is read one token "
                "at a time with a KV cache of at most W entries. *Window alone*: the cache drops its oldest entry when "
                "full. *Window + first S*: it never drops its first S entries (the sinks). *Recompute*: the last W "
                "tokens run from scratch for every token. As in the paper, positions are slots in the cache: keys are "
                "kept before rotation and rotated by their slot at every step, so no distance exceeds W.")
STREAM_CAPTION = ("Perplexity over the tokens predicted once the cache is full (before that the three methods are the "
                  "same pass). The chart: the loss per token, a running mean over {k} tokens.")
ONE_TEXT_NOTE = ("A model trained on short texts, each starting with its own start token, may read this joined text "
                 "badly at any window: compare the perplexities here with the loss table above, and switch the "
                 "stream to texts as in training for the other case.")
CLAIM_CACHE = ("with a cache larger than the text ({T} tokens) the window alone and the window + sinks equal one "
               "ordinary forward pass, token by token")
CLAIM_RECOMPUTE = "recomputing with a window as long as the text ({T} tokens) equals one ordinary forward pass"
