"""What a preset question is and reads: a Preset (prompt, choices, the model's answer), the Inputs (model,
the view's settings, a loader and the server's cache), a registry Row, and the pieces every question shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from viz_model.model_text import encode_for, is_folder_model

MAX_CHOICES = 16          # the class store's MAX_CHOICES: a poll shows at most this many bars


MAX_TOKEN_CHOICES = MAX_CHOICES  # a longer sentence asks about its last 16 tokens


FOLDER_VIEW_TOKENS = 64   # ui.widgets.FOLDER_VIEW_TOKENS: a real model's views read at most this many tokens


QKV_MAX_T = 16            # ui.qkv.MAX_T: the lookup's sentence is cut to this many tokens


MAX_PROMPT_CHARS = 200    # the class store's MAX_PROMPT_CHARS


@dataclass(frozen=True)
class Preset:
    kind: str
    prompt: str
    choices: list[str]
    answer: dict


def _no_cache(name: str, key: tuple, build: Callable[[], Any]) -> Any:
    return build()


@dataclass(frozen=True)
class Inputs:
    """What a preset reads: the sidebar's model (a Checkpoint), the view's settings, a loader for the models a page
    picks itself (the Encoder's, the translator) and the server's cache (the page's own results, e.g. a measurement
    behind a button, are read from it, never run again for a question)."""

    ckpt: Any
    settings: Mapping = field(default_factory=dict)
    load: Callable[[str], Any] | None = None
    cached: Callable[[str, tuple, Callable[[], Any]], Any] = _no_cache


@dataclass(frozen=True)
class Row:
    name: str                          # stable: lectures name it (`ask: preset NAME`)
    page: str                          # the page's URL path, as lectures.PAGE_PARAMS names it
    label: str                         # what the "Ask the class" box lists
    compute: Callable[[Inputs], Preset]
    live: bool = False                 # reads results the page keeps (a measurement run on the server): not cached


def _tok(t: str) -> str:
    return t.strip() or repr(t)


def _argmax_all(values: Sequence[float]) -> list[int]:
    """Every index of the maximum (ties: all of them)."""
    v = np.asarray(values, dtype=float)
    return [int(i) for i in np.flatnonzero(v >= v.max() - 1e-9)]


def _flag(value: Any) -> bool:
    """An on/off setting: a widget's bool, or a link's "true" / "false"."""
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1", "on")


def _option(value: Any, labels: Mapping[str, str]) -> Any:
    """A picker's value: a widget's own, or a link's (a share link carries the option's label: "Sliding window")."""
    return {label: key for key, label in labels.items()}.get(value, value)


def _index(value: Any, default: int) -> int:
    """A numbered picker's value: an int, or a link's label that starts with it ("3 · sat")."""
    digits = str(value).strip().split(" ", 1)[0]
    return int(digits) if digits.isdigit() else default


def _checked(p: Preset) -> Preset:
    if not 2 <= len(p.choices) <= MAX_CHOICES:
        raise ValueError(f"This view gives {len(p.choices)} possible answers; a question needs 2 to {MAX_CHOICES}.")
    if not p.answer.get("correct") or any(not 0 <= i < len(p.choices) for i in p.answer["correct"]):
        raise ValueError("The model's answer is not one of the choices.")
    if len(p.prompt) > MAX_PROMPT_CHARS:
        return Preset(p.kind, p.prompt[:MAX_PROMPT_CHARS - 2] + "…?", p.choices, p.answer)
    return p


def _encode(ckpt, text: str, bos: bool, limit: int | None = None, specials: tuple[str, ...] = (), least: int = 2,
            page: str = "the page"):
    """The view's sentence as its page reads it; a clear ValueError for a sentence too short to ask about."""
    max_len = ckpt.model.config.max_len
    if is_folder_model(ckpt):
        max_len = min(max_len, FOLDER_VIEW_TOKENS)
    enc = encode_for(ckpt, str(text or ""), max_len=min(max_len, limit or max_len), bos=bos, specials=specials)
    if len(enc.ids) - int(bos) < 1 or len(enc.ids) < least:
        raise ValueError(f"Type a sentence of at least {least} tokens on {page} first: there is nothing to ask about.")
    return enc


def _layer_head(cfg, settings: Mapping, prefix: str, head: int = 0) -> tuple[int, int]:
    """The view's layer and head, clipped to the model's (a head picker's "mean" reads as head 0)."""
    raw = settings.get(f"{prefix}_head", head)
    layer = _index(settings.get(f"{prefix}_layer", 0), 0)
    return min(layer, cfg.n_layers - 1), min(_index(raw, head), cfg.n_heads - 1)


def _picked(inp: Inputs, key: str, default: str):
    """The model a page picks itself (the Encoder's, the translator): the view's, else (a link's label, a model this
    server does not offer) the page's default."""
    if inp.load is None:
        return inp.ckpt
    try:
        return inp.load(str(inp.settings.get(key, default)))
    except (KeyError, ValueError, FileNotFoundError):
        return inp.load(default)


def _size_choices(answer: int, fmt: Callable[[float], str], steps: Sequence[float] = (1 / 16, 1 / 4, 1, 4, 16)
                  ) -> tuple[list[str], list[int]]:
    """A ladder of sizes around a measured one: (choices, [the measured one's index])."""
    labels = list(dict.fromkeys(fmt(answer * s) for s in steps))
    return labels, [labels.index(fmt(answer))]


def _short(enc, n: int, skip: int = 0) -> str:
    """The sentence as read (its start token left out), cut to n characters."""
    text = " ".join(_tok(t) for t in enc.tokens[skip:])
    return text if len(text) <= n else text[:n - 1] + "…"
