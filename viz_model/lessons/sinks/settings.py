"""The streaming view's settings: the KV cache's size and its sinks, the stream's length and kind, read
from the page's widgets (or a link) and checked against the model's context."""

from __future__ import annotations

from dataclasses import dataclass

from viz_model.english import load_heldout
from viz_model.lessons.sinks.text import SOURCES
from viz_model.model import TinyTransformer
from viz_model.model_text import encode_for, end_token, uses_bos

STREAMS = {"one": "one long text (one start token)", "packed": "texts as in training (each with its start token)"}


MIN_WINDOW, MAX_SINKS = 8, 4


STREAM_FACTORS = (1.5, 2.0, 3.0)  # the stream's length in contexts (the page's choices)


MAX_STREAM_TOKENS = 1024  # a real model's context may be 128k: the stream is cut here


STREAMING_POSITIONS = ("rope", "alibi", "none")


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


# -- what the page says ------------------------------------------------------------------------------------------
STREAM_KIND_HELP = ("One long text: one start token at the very beginning, so a sliding window soon loses it. Texts "
                    "as in training: every text starts with its own start token, so any window holds several.")
NO_STREAM_POSITIONS = ("This model adds {pos} positions to the token vectors before the first layer, so a cached key "
                       "keeps the position it was computed at and cannot move to its slot in the cache. The streaming "
                       "experiment runs on models with RoPE, ALiBi or no positions; the head map and the loss "
                       "comparison above still apply.")
BAD_WINDOW = "A cache holds {lo} to {hi} entries (the model's context) and more than its sinks."
SHORT_STREAM = ("The stream ({n} tokens) is not longer than the window ({w}): nothing would slide. Pick a smaller "
                "window or a longer stream.")
