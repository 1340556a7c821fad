"""What the Attention sinks page proves (Xiao et al., 2023, "Efficient Streaming Language Models with Attention
Sinks"): how much attention every head puts on the first token of held-out text; what the next-token loss does when
that token is dropped or hidden (rows renormalised); and the StreamingLLM experiment on a text longer than the
context: a sliding-window KV cache alone, the same window plus the first tokens kept, and recomputing the window
from scratch for every token (torch only).

Positions in the streaming cache are assigned within the cache, as in the paper: keys are kept before rotation and
rotated by their slot in the cache at every step, so the model never sees a distance larger than the cache. The
model's own KV cache already places a new query at slot len(cache) (positions = past_len ...); the lesson stores the
keys unrotated (rotated back once by their slot) and rotates them by their current slot before each step: no change
to the model. ALiBi's bias and models without positions read slots the same way; learned or sinusoidal positions are
added to the token vectors before layer 1, so a cached key keeps the position it was computed at (not streamed here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import rope
from viz_model.english import load_heldout
from viz_model.lessons.common import Check
from viz_model.model import TinyTransformer, eval_mode
from viz_model.model_text import encode_for, end_token, start_token, uses_bos

SOURCES = {"wordnet": "WordNet glosses and examples", "python_docs": "Python's documentation"}
STREAMS = {"one": "one long text (one start token)", "packed": "texts as in training (each with its start token)"}
N_TEXTS = 64             # held-out texts for the head map and the loss comparison
MIN_WINDOW, MAX_SINKS = 8, 4
STREAM_FACTORS = (1.5, 2.0, 3.0)  # the stream's length in contexts (the page's choices)
MAX_STREAM_TOKENS = 1024  # a real model's context may be 128k: the stream is cut here
STREAMING_POSITIONS = ("rope", "alibi", "none")
POS_NAMES = {"rope": "RoPE", "alibi": "ALiBi", "none": "no", "learned": "learned", "sinusoidal": "sinusoidal"}
BATCH = 32


def check_model(model) -> None:
    """A clear ValueError for a model the lesson is not about: an encoder (no causal mask) or a non-transformer."""
    if not isinstance(model, TinyTransformer):
        raise ValueError(NOT_TRANSFORMER)
    if not model.config.causal:
        raise ValueError(NOT_CAUSAL)


def streams_positions(model: TinyTransformer) -> bool:
    return model.config.pos_encoding in STREAMING_POSITIONS


DEFAULT_WINDOW, DEFAULT_SINKS, DEFAULT_FACTOR, DEFAULT_SOURCE, DEFAULT_STREAM = 64, 4, 2.0, "wordnet", "one"


def default_window(max_len: int) -> int:
    options = window_choices(max_len)
    return DEFAULT_WINDOW if DEFAULT_WINDOW in options else options[len(options) // 2]


def stream_tokens(factor: float, max_len: int) -> int:
    return min(int(factor * max_len), MAX_STREAM_TOKENS)


@dataclass(frozen=True)
class StreamView:
    source: str
    kind: str
    n_tokens: int
    window: int   # the first (smallest) cache size picked
    sinks: int
    windows: tuple[int, ...] = ()  # every cache size picked, smallest first


def view_of(settings, max_len: int) -> StreamView:
    """The streaming view's settings as the widgets hold them (or as a link carries them: text), each invalid one
    replaced by the page's default: what the class question asks about."""
    def pick(key, options: dict, default):  # a widget holds the option, a link its label
        v = settings.get(key, default)
        return v if v in options else {label: k for k, label in options.items()}.get(v, default)
    raw = settings.get("sinks_windows", [default_window(max_len)])
    raw = raw if isinstance(raw, (list, tuple)) else [raw]
    windows = sorted(int(w) for w in raw if str(w).strip().isdigit() and int(w) in window_choices(max_len))
    try:
        factor = float(settings.get("sinks_len", DEFAULT_FACTOR))
    except (TypeError, ValueError):
        factor = DEFAULT_FACTOR
    sinks = str(settings.get("sinks_n", DEFAULT_SINKS)).strip()
    return StreamView(pick("sinks_source", SOURCES, DEFAULT_SOURCE), pick("sinks_stream", STREAMS, DEFAULT_STREAM),
                      stream_tokens(factor if factor in STREAM_FACTORS else DEFAULT_FACTOR, max_len),
                      windows[0] if windows else default_window(max_len),
                      int(sinks) if sinks.isdigit() and 1 <= int(sinks) <= MAX_SINKS else DEFAULT_SINKS,
                      tuple(windows) or (default_window(max_len),))


def running_k(n_tokens: int) -> int:
    """The stream chart's running mean: over this many tokens."""
    return max(8, min(64, n_tokens // 16))


def window_choices(max_len: int) -> list[int]:
    """Cache sizes offered: powers of two from MIN_WINDOW up to the model's context (never larger)."""
    out, w = [], MIN_WINDOW
    while w <= min(max_len, MAX_STREAM_TOKENS // 2):
        out.append(w)
        w *= 2
    return out


# -- held-out text ----------------------------------------------------------------------------------------------
def heldout_ids(ckpt, source: str = "wordnet", n: int = N_TEXTS) -> list[list[int]]:
    """n held-out texts as the model reads a text (its start token first where it uses one), at least 3 tokens
    each (the loss comparison predicts from the third token on), cut at the context."""
    if source not in SOURCES:
        raise ValueError(f"Pick a held-out source: {', '.join(SOURCES.values())}.")
    bos = uses_bos(ckpt)
    out = []
    for text in load_heldout()[source]:
        ids = encode_for(ckpt, text, max_len=ckpt.model.config.max_len, bos=bos).ids
        if len(ids) >= 3:
            out.append(list(ids))
        if len(out) == n:
            break
    return out


def stream_ids(ckpt, source: str, kind: str, n_tokens: int) -> list[int]:
    """A stream of n_tokens held-out tokens longer than the context: one text (the texts joined by spaces, one start
    token) or the texts packed as in training (each with its own start and end token)."""
    if kind not in STREAMS or source not in SOURCES:
        raise ValueError("Pick a stream kind and a held-out source from the lists.")
    texts, bos = load_heldout()[source], uses_bos(ckpt)
    if kind == "one":
        ids = list(encode_for(ckpt, " ".join(texts[:400]), bos=bos).ids)
    else:
        end = end_token(ckpt)
        ids = []
        for text in texts:
            ids += list(encode_for(ckpt, text, bos=bos).ids) + ([end[0]] if end else [])
            if len(ids) >= n_tokens:
                break
    if len(ids) < n_tokens:
        raise ValueError(f"The held-out text has {len(ids)} tokens for this model, fewer than the {n_tokens} asked.")
    return ids[:n_tokens]


def _padded(seqs: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    ids = torch.full((len(seqs), max(len(s) for s in seqs)), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s))
    return ids


# -- the first token's share, per head --------------------------------------------------------------------------
@torch.no_grad()
def first_token_share(model: TinyTransformer, seqs: Sequence[Sequence[int]]) -> np.ndarray:
    """(L, H): the mean weight each head puts on key 0, over every query from position 1 on of every text (query 0
    can only read key 0). Right padding: causal, so a pad never reaches a real row."""
    check_model(model)
    total, count = None, 0
    with eval_mode(model):
        for i in range(0, len(seqs), BATCH):
            chunk = seqs[i: i + BATCH]
            probs = model(_padded(chunk, model.config.pad_id).to(model.device), trace=True).trace.stack("probs")
            valid = torch.zeros(probs.shape[1], probs.shape[3])  # (B, T)
            for j, s in enumerate(chunk):
                valid[j, 1: len(s)] = 1.0
            part = (probs[..., :, 0].double() * valid[None, :, None, :]).sum(dim=(1, 3))  # (L, H)
            total = part if total is None else total + part
            count += int(valid.sum())
    return (total / count).numpy()


def top_head(share: np.ndarray) -> tuple[int, int, float]:
    layer, head = np.unravel_index(int(np.argmax(share)), share.shape)
    return int(layer), int(head), float(share[layer, head])


# -- the loss without the first token ---------------------------------------------------------------------------
def hide_first_key(T: int, device=None) -> torch.Tensor:
    """(T, T) bool: causal, and key 0 hidden from every query but query 0 (which has nothing else to read)."""
    allowed = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    allowed[1:, 0] = False
    return allowed


@dataclass(frozen=True)
class LossComparison:
    as_is: np.ndarray      # per predicted token (the third token of each text on), nats
    dropped: np.ndarray    # the same targets with the first token removed from the input
    hidden: np.ndarray     # the same targets with key 0 hidden and each row renormalised

    def means(self) -> dict[str, float]:
        return {name: float(getattr(self, name).mean()) for name in ("as_is", "dropped", "hidden")}


def _target_losses(logits: torch.Tensor, seqs, first_target: int, offset: int) -> np.ndarray:
    """-log p of seq[first_target:] for each sequence, read at logits row t - 1 - offset."""
    lp = torch.log_softmax(logits.float().cpu(), -1)
    out = []
    for j, s in enumerate(seqs):
        t = torch.arange(first_target, len(s))
        out.append(-lp[j, t - 1 - offset, torch.tensor(list(s))[t]].double().numpy())
    return np.concatenate(out)


@torch.no_grad()
def loss_comparison(model: TinyTransformer, seqs: Sequence[Sequence[int]]) -> LossComparison:
    """The next-token loss on the same targets (each text's third token on): as is; with the first token dropped
    from the input; with the first token's key hidden from every later query (rows renormalised)."""
    check_model(model)
    seqs = [list(s) for s in seqs if len(s) >= 3]
    if not seqs:
        raise ValueError(TOO_SHORT)
    parts: dict[str, list[np.ndarray]] = {"as_is": [], "dropped": [], "hidden": []}
    pad = model.config.pad_id
    with eval_mode(model):
        for i in range(0, len(seqs), BATCH):
            chunk = seqs[i: i + BATCH]
            ids = _padded(chunk, pad).to(model.device)
            parts["as_is"].append(_target_losses(model(ids).logits, chunk, 2, 0))
            parts["dropped"].append(_target_losses(model(ids[:, 1:]).logits, chunk, 2, 1))
            hidden = model(ids, attn_mask=hide_first_key(ids.shape[1], model.device)).logits
            parts["hidden"].append(_target_losses(hidden, chunk, 2, 0))
    return LossComparison(*(np.concatenate(parts[k]) for k in ("as_is", "dropped", "hidden")))


def loss_table(cmp: LossComparison) -> list[dict[str, object]]:
    m = cmp.means()
    rows = [("as is", m["as_is"]), ("first token dropped", m["dropped"]),
            ("first token hidden, rows renormalised", m["hidden"])]
    return [{"input": name, "loss (nats)": round(v, 4), "perplexity": round(math.exp(v), 2),
             "change in loss": round(v - m["as_is"], 4)} for name, v in rows]


@torch.no_grad()
def renormalised_rows_claim(model: TinyTransformer, ids: Sequence[int]) -> Check:
    """Layer 0 (the same input in both passes): the probs under hide_first_key equal the unmasked probs with column
    0 set to zero and each row divided by its new sum."""
    x = torch.tensor([list(ids)], device=model.device)
    with eval_mode(model):
        free = model(x, trace_layers=(0,), logits=False).trace.layers[0].probs[0].double()
        hidden = model(x, attn_mask=hide_first_key(len(ids), model.device), trace_layers=(0,),
                       logits=False).trace.layers[0].probs[0].double()
    by_hand = free.clone()
    by_hand[:, 1:, 0] = 0.0
    by_hand = by_hand / by_hand.sum(-1, keepdim=True)
    return Check(float((by_hand - hidden).abs().max()), 1e-5, CLAIM_RENORM.format(T=len(ids)))


def loss_claims(model: TinyTransformer, seqs: Sequence[Sequence[int]], cmp: LossComparison) -> list[Check]:
    """The renormalised-row equivalence on the first held-out text; and, for a model whose positions are only
    distances (RoPE, ALiBi, none), that hiding key 0 gives the same losses as dropping the token."""
    claims = [renormalised_rows_claim(model, seqs[0])]
    if streams_positions(model):
        err = float(np.abs(cmp.hidden - cmp.dropped).max())
        claims.append(Check(err, 1e-3, CLAIM_RELATIVE.format(pos=POS_NAMES[model.config.pos_encoding])))
    return claims


# -- the streaming experiment -----------------------------------------------------------------------------------
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


# -- sentences computed from the numbers ------------------------------------------------------------------------
def share_sentence(share: np.ndarray, first: str) -> str:
    layer, head, top = top_head(share)
    many = int((share > 0.5).sum())
    return (f"Layer {layer} head {head} puts the most weight on the first token ({first}): {top:.2f} of every "
            f"row on average. {many} of {share.size} heads put more than half of their weight there.")


def loss_sentence(cmp: LossComparison) -> str:
    m = cmp.means()
    d, h = m["dropped"] - m["as_is"], m["hidden"] - m["as_is"]

    def say(x: float) -> str:
        return (f"raises the loss by {x:.3f} nats (perplexity × {math.exp(x):.2f})" if x > 0.01 else
                f"lowers the loss by {-x:.3f} nats" if x < -0.01 else f"barely changes the loss ({x:+.3f} nats)")
    return (f"On {len(cmp.as_is):,} predicted tokens: dropping the first token {say(d)}; hiding it and "
            f"renormalising the rows {say(h)}.")


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


def first_label(ckpt, seqs: Sequence[Sequence[int]]) -> str:
    start = start_token(ckpt)
    return start[1] if uses_bos(ckpt) and start is not None else "the text's first word"


# -- what the page says -----------------------------------------------------------------------------------------
INTRO = ("Many heads put most of their weight on the first token, whatever it is. Xiao et al. (2023, "
         "StreamingLLM) call these **attention sinks**: softmax rows must sum to 1, and a head with nothing useful to "
         "read parks its weight on the one token every query can see. Below: how much each head of the sidebar's "
         "model does it on held-out text, what the loss does without that token, and why it matters for a KV cache "
         "that slides over a text longer than the context.")
SHARE_TITLE = "Share of each head's attention on the first token"
LOSS_TITLE = "Next-token loss on the same targets"
STREAM_TITLE = "Loss over the stream, three KV caches"
SHARE_CAPTION = ("Each cell: the mean weight a head puts on key 0, over every query from position 1 on of {n} "
                 "held-out texts ({source}). Query 0 is left out: it can only read key 0.")
LOSS_INTRO = ("Three passes over the same held-out texts, scored on the same targets (each text's third token on): "
              "as is; with the first token **dropped** from the input (every token moves one position left); and "
              "with the first token **hidden**: an attention mask takes key 0 away from every query but query 0, "
              "which is exactly the attention rows with that column removed and renormalised.")
STREAM_INTRO = ("**The streaming experiment.** A held-out text {factor:g}× the context ({n} tokens) is read one token "
                "at a time with a KV cache of at most W entries. *Window alone*: the cache drops its oldest entry when "
                "full. *Window + first S*: it never drops its first S entries (the sinks). *Recompute*: the last W "
                "tokens run from scratch for every token. As in the paper, positions are slots in the cache: keys are "
                "kept before rotation and rotated by their slot at every step, so no distance exceeds W.")
STREAM_CAPTION = ("Perplexity over the tokens predicted once the cache is full (before that the three methods are the "
                  "same pass). The chart: the loss per token, a running mean over {k} tokens.")
STREAM_KIND_HELP = ("One long text: one start token at the very beginning, so a sliding window soon loses it. Texts "
                    "as in training: every text starts with its own start token, so any window holds several.")
ONE_TEXT_NOTE = ("A model trained on short texts, each starting with its own start token, may read this joined text "
                 "badly at any window: compare the perplexities here with the loss table above, and switch the "
                 "stream to texts as in training for the other case.")
CLAIM_RENORM = ("hiding key 0 with the attention mask gives exactly the rows with key 0 removed and renormalised "
                "(layer 0, {T} tokens)")
CLAIM_RELATIVE = ("with {pos} positions a score depends only on the distance between query and key, so hiding key 0 "
                  "gives every remaining token exactly the loss it gets with the first token dropped (max difference "
                  "per token)")
CLAIM_CACHE = ("with a cache larger than the text ({T} tokens) the window alone and the window + sinks equal one "
               "ordinary forward pass, token by token")
CLAIM_RECOMPUTE = "recomputing with a window as long as the text ({T} tokens) equals one ordinary forward pass"
NOT_TRANSFORMER = "This lesson reads a decoder transformer's attention; pick a transformer in the sidebar."
NOT_CAUSAL = ("This lesson is about decoders: a causal model reads a text left to right, so every query sees the "
              "first token and a KV cache slides over a long text. The sidebar's model is an encoder (every token "
              "reads both sides): pick a decoder in the sidebar.")
NO_STREAM_POSITIONS = ("This model adds {pos} positions to the token vectors before the first layer, so a cached key "
                       "keeps the position it was computed at and cannot move to its slot in the cache. The streaming "
                       "experiment runs on models with RoPE, ALiBi or no positions; the head map and the loss "
                       "comparison above still apply.")
BAD_WINDOW = "A cache holds {lo} to {hi} entries (the model's context) and more than its sinks."
SHORT_STREAM = ("The stream ({n} tokens) is not longer than the window ({w}): nothing would slide. Pick a smaller "
                "window or a longer stream.")
TOO_SHORT = "Every held-out text is shorter than 3 tokens for this model: there is nothing to compare."
