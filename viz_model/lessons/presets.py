"""A preset prediction question on every page (#39, item 6): one registry, PRESETS, of rows (a stable NAME that a
lecture names with `ask: preset NAME`, the page's URL path, the label the "Ask the class" box lists, and a function
computing the Preset from the model and the view's settings). The model's answer is computed now, on the view the
question is about: Preset.answer is {"correct": [choice indices], "why": a sentence built from the measured numbers}.

The settings are the page's widget values by key (st.session_state in the app, a dict in tests); a setting the
page has not drawn yet takes the page's own default. Nothing here knows Streamlit: `Inputs.load` (a model by its key)
and `Inputs.cached` (the server's cache, shared with the page) come from the ui layer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from viz_model import masks, rope
from viz_model.config import NORMS, POS_ENCODINGS, QKV_MODES
from viz_model.data import TASK_LABELS
from viz_model.lecture import EXAMPLES, PROMPTS, ROPE_SENTENCE
from viz_model.lectures import PAGE_ALIASES
from viz_model.lessons import alibi as alibi_lesson
from viz_model.lessons import attribution as attribution_lesson
from viz_model.lessons import cost as cost_lesson
from viz_model.lessons import encoder as encoder_lesson
from viz_model.lessons import generate as generate_lesson
from viz_model.lessons import lens as lens_lesson
from viz_model.lessons import normalization as norm_lesson
from viz_model.lessons import qkv as qkv_lesson
from viz_model.lessons import recurrence as rec_lesson
from viz_model.lessons import rope as rope_lesson
from viz_model.lessons import sinks as sinks_lesson
from viz_model.lessons import train as train_lesson
from viz_model.model import eval_mode
from viz_model.model_text import encode_for, is_folder_model, pad_token, token_texts, uses_bos
from viz_model.positional import sinusoidal_encoding
from viz_model.seq2seq import translate
from viz_model.tokenizer import MASK, PAD, load_tokenizer

MAX_CHOICES = 16          # the class store's MAX_CHOICES: a poll shows at most this many bars
MAX_TOKEN_CHOICES = MAX_CHOICES  # a longer sentence asks about its last 16 tokens
FOLDER_VIEW_TOKENS = 64   # ui.widgets.FOLDER_VIEW_TOKENS: a real model's views read at most this many tokens
QKV_MAX_T = 16            # ui.qkv.MAX_T: the lookup's sentence is cut to this many tokens
MAX_PROMPT_CHARS = 200    # the class store's MAX_PROMPT_CHARS
RECALL_BAR = 0.9          # "recalls": at least this share of the held-out inputs answered right
# The RoPE page's context-extension settings a question reads: rope_question's `extra` name -> widget key
ROPE_EXTRA_KEYS = {"beta_fast": "rope_ext_bf", "beta_slow": "rope_ext_bs", "low_freq_factor": "rope_ext_lo",
                   "high_freq_factor": "rope_ext_hi"}


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


# -- shared pieces --------------------------------------------------------------------------------------------
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


# -- Start (moved from lessons.class_mode) ---------------------------------------------------------------------
def attention_row(model, ids: Sequence[int], layer: int, head: int, query: int = -1) -> np.ndarray:
    """One query's attention weights (T,) in head (layer, head): one traced pass of the model, now."""
    with torch.no_grad(), eval_mode(model):
        trace = model(torch.tensor([list(ids)], device=model.device), trace=True).trace
    return trace.layers[layer].probs[0, head, query].float().cpu().numpy()


def attention_question(tokens: Sequence[str], row: np.ndarray, layer: int, head: int, query: int | None = None
                       ) -> Preset:
    """"Which word will head L·H attend to most from '<token>'?" over the sentence's tokens. `row` is that
    query's attention weights (T,) from the model's trace; the answer is its argmax (ties: every maximal key)."""
    tokens = list(tokens)
    row = np.asarray(row, dtype=float)
    if row.shape != (len(tokens),):
        raise ValueError(f"The attention row has {row.shape} weights for {len(tokens)} tokens.")
    query = len(tokens) - 1 if query is None else query
    start = max(0, len(tokens) - MAX_TOKEN_CHOICES)
    keys = list(range(start, len(tokens)))
    choices = [f"{i} {_tok(tokens[i])}" for i in keys]
    best = float(row[keys].max())
    correct = [j for j, i in enumerate(keys) if row[i] >= best - 1e-9]
    top = keys[correct[0]]
    why = (f"Layer {layer} · head {head} gives {row[top]:.0%} of the attention from “{tokens[query].strip()}” to "
           f"“{tokens[top].strip()}” (token {top})" + (f", the most of the {len(keys)} tokens." if len(correct) == 1
                                                        else f", tied with {len(correct) - 1} other token(s)."))
    prompt = f"Which word will head {layer}·{head} attend to most from “{tokens[query].strip()}” (token {query})?"
    return Preset("attention", prompt, choices, {"correct": correct, "why": why})


def start_question(model, tokens: Sequence[str], ids: Sequence[int], layer: int, head: int) -> Preset:
    """The Start page's question: which token the last one attends to most in head (layer, head) (clipped to the
    model's layers and heads), answered by one pass of the model now."""
    if len(ids) < 2:
        raise ValueError("Type a sentence of at least two tokens on the Start page first.")
    layer, head = min(layer, model.config.n_layers - 1), min(head, model.config.n_heads - 1)
    return attention_question(tokens, attention_row(model, ids, layer, head), layer, head)


def start_row(inp: Inputs) -> Preset:
    s, ckpt = inp.settings, inp.ckpt
    bos = _flag(s.get("start_bos", uses_bos(ckpt)))
    enc = encode_for(ckpt, str(s.get("start_text", "The cat sat on the mat")), bos=bos,
                     max_len=min(ckpt.model.config.max_len, FOLDER_VIEW_TOKENS) if is_folder_model(ckpt)
                     else ckpt.model.config.max_len)
    return start_question(ckpt.model, enc.tokens, enc.ids, int(s.get("start_layer", 0)), int(s.get("start_head", 0)))


# -- RoPE (moved from lessons.class_mode) ----------------------------------------------------------------------
def rope_question(d_k: int, base: float, train_len: int, target_len: int, extra: dict | None = None) -> Preset:
    """"Which RoPE method keeps every angle within the trained range?" at these context-extension settings; the
    answer is every method whose angles at L′ stay within those seen over L for every pair (angle_coverage)."""
    if target_len < train_len:
        raise ValueError("The target length L′ is shorter than the training length L: there is nothing to extend.")
    table = rope_lesson.scaling_table(d_k, base, train_len, target_len, extra)
    theta = rope.default_inv_freq(d_k, base).numpy()
    methods = list(table)
    outside = {}
    for m in methods:
        ratio, _ = table[m]
        seen, needed = rope_lesson.angle_coverage(theta, theta * ratio, train_len, target_len)
        outside[m] = int((needed > seen + 1e-9).sum())
    labels = [rope.ROPE_SCALING_LABELS[m] for m in methods]
    correct = [i for i, m in enumerate(methods) if outside[m] == 0]
    counts = "; ".join(f"{rope.ROPE_SCALING_LABELS[m]}: {outside[m]}" for m in methods)
    why = (f"Of the {d_k // 2} pairs, how many reach angles at L′ = {target_len:,} that training (L = {train_len:,}, "
           f"base {base:,.0f}) never produced: {counts}.")
    prompt = f"Which RoPE method keeps every angle within the trained range at L′ = {target_len:,} (L = {train_len:,})?"
    return Preset("rope", prompt, labels, {"correct": correct, "why": why})


def rope_preset(config, settings: Mapping) -> Preset:
    """The RoPE page's question at its context-extension settings (`settings`: its widget values by key; a setting
    not drawn yet takes the page's default, lessons.rope.panel_defaults)."""
    d = rope_lesson.panel_defaults(config)
    L, Lp = int(settings.get("rope_ext_L", d["L"])), int(settings.get("rope_ext_Lp", d["Lp"]))
    extra = {name: float(settings[key]) for name, key in ROPE_EXTRA_KEYS.items() if key in settings}
    return rope_question(int(settings.get("rope_ext_dk", d["d_k"])), float(settings.get("rope_ext_base", d["base"])),
                         L, Lp, extra)


def rope_extension(inp: Inputs) -> Preset:
    return rope_preset(inp.ckpt.model.config, inp.settings)


# -- Explorer -------------------------------------------------------------------------------------------------
def previous_token_weights(probs: np.ndarray) -> np.ndarray:
    """(H,) each head's mean weight on the previous token, over the queries that have one: probs (H, T, T)."""
    T = probs.shape[-1]
    return probs[:, np.arange(1, T), np.arange(T - 1)].mean(axis=1)


def explorer_previous(inp: Inputs) -> Preset:
    """Which head of the view's layer attends most to the previous token, under the page's knobs (scale,
    temperature, mask), answered by one traced pass of that layer now."""
    s, ckpt = inp.settings, inp.ckpt
    model, cfg = ckpt.model, ckpt.model.config
    enc = _encode(ckpt, s.get("explorer_text", EXAMPLES[1]), uses_bos(ckpt), page="the Explorer")
    layer, _ = _layer_head(cfg, s, "explorer")
    T = len(enc.ids)
    mask = masks.build_mask(masks.kind_named(str(s.get("explorer_mask", cfg.mask))), T)  # the Explorer's mask knob
    with torch.no_grad(), eval_mode(model):
        tr = model(torch.tensor([enc.ids], device=model.device), trace=True, attn_mask=mask.to(model.device),
                   scale_scores=_flag(s.get("explorer_scale", True)), temperature=float(s.get("explorer_temp", 1.0)),
                   trace_layers=(layer,), logits=False).trace
    probs = tr.layers[layer].probs[0].float().cpu().numpy()  # (H, T, T)
    weights = previous_token_weights(probs)[:MAX_CHOICES]
    correct = _argmax_all(weights)
    top = correct[0]
    others = sorted(range(len(weights)), key=lambda h: -weights[h])[1:3]
    why = (f"In layer {layer}, head {top} puts {weights[top]:.0%} of each token's attention on the token just before "
           f"it (mean over {T - 1} tokens)" + "".join(f"; head {h}: {weights[h]:.0%}" for h in others) + ".")
    text = _short(enc, 60, int(uses_bos(ckpt)))
    prompt = f"Which head of layer {layer} attends most to the previous token, on “{text}”?"
    return Preset("explorer", prompt, [f"head {h}" for h in range(len(weights))], {"correct": correct, "why": why})


def _short(enc, n: int, skip: int = 0) -> str:
    """The sentence as read (its start token left out), cut to n characters."""
    text = " ".join(_tok(t) for t in enc.tokens[skip:])
    return text if len(text) <= n else text[:n - 1] + "…"


# -- Masks ----------------------------------------------------------------------------------------------------
def masks_visible(inp: Inputs) -> Preset:
    """How many keys row t (the middle token) may read under the gallery's mask, as the model really applies it
    (a row with no allowed key attends to itself)."""
    s, ckpt = inp.settings, inp.ckpt
    enc = _encode(ckpt, s.get("masks_text", "The cat sat on the mat"), uses_bos(ckpt), limit=MAX_CHOICES,
                  specials=(PAD,), page="the Masks page")
    T = len(enc.ids)
    kind = _option(s.get("masks_kind", "causal"), {k: r.label for k, r in masks.MASKS.items()})
    row = masks.MASKS.get(kind)
    if row is None or row.needs == "cells":
        raise ValueError("The custom mask is drawn by hand: pick another mask in the gallery to ask about it.")
    inputs = {p.name: min(max(int(s.get(f"masks_{p.key}", min(p.default, T))), p.low), T) for p in row.params}
    if row.needs == "real":
        inputs["real"] = np.array(enc.ids) != pad_token(ckpt)[0]
    allowed = masks.build_mask(kind, T, **inputs)
    with torch.no_grad(), eval_mode(ckpt.model):
        tr = ckpt.model(torch.tensor([enc.ids], device=ckpt.model.device), trace=True,
                        attn_mask=allowed.to(ckpt.model.device), trace_layers=(0,), logits=False).trace
    used = tr.allowed(0)[0, 0].cpu().numpy()  # (T, T): what the model applied
    t = T // 2
    seen = [int(k) for k in np.flatnonzero(used[t])]
    prompt = (f"Under the {row.label} mask, how many tokens can row {t} (“{_tok(enc.tokens[t])}”) see, itself "
              "included?")
    why = (f"Row {t} may read {len(seen)} of the {T} keys: " + ", ".join(f"{k} {_tok(enc.tokens[k])}" for k in seen)
           + ("" if used[t].any() == bool(allowed[t].any()) else " (the mask allowed none, so it reads itself)") + ".")
    return Preset("masks", prompt, [str(n) for n in range(1, T + 1)], {"correct": [len(seen) - 1], "why": why})


# -- Q, K and V ------------------------------------------------------------------------------------------------
def qkv_best_key(inp: Inputs) -> Preset:
    """Which key the view's query matches best (its highest scaled q·k score among the keys it may read)."""
    s, ckpt = inp.settings, inp.ckpt
    if is_folder_model(ckpt) and inp.load is not None:  # the page runs the shipped classroom model then
        ckpt = inp.load("classroom")
    raw = str(s.get("qkv_text", "The cat sat on the mat") or "")
    enc = _encode(ckpt, raw, uses_bos(ckpt), limit=QKV_MAX_T, page="the Q, K and V page")
    text = qkv_lesson.lesson_text(enc, raw)  # what the page's lookup reads (a long text: its first tokens)
    _, tokens = qkv_lesson.encode_sentence(ckpt.model, ckpt.tokenizer, text)
    layer, head = _layer_head(ckpt.model.config, s, "qkv")
    query = min(_index(s.get("qkv_query"), qkv_lesson.default_query(tokens)), len(tokens) - 1)
    lk = qkv_lesson.lookup(ckpt.model, ckpt.tokenizer, text, layer, head, query)
    keys = [int(k) for k in np.flatnonzero(lk.allowed)][-MAX_CHOICES:]
    scores = np.asarray(lk.scores, dtype=float)[keys]
    correct = _argmax_all(scores)
    top = keys[correct[0]]
    why = (f"Layer {layer} · head {head}: q of “{_tok(lk.tokens[query])}” · k of “{_tok(lk.tokens[top])}” scores "
           f"{scores[correct[0]]:.2f}, the highest of the {len(keys)} keys it may read (weight "
           f"{float(np.asarray(lk.probs)[top]):.0%} after the softmax).")
    prompt = (f"Which key does the query “{_tok(lk.tokens[query])}” (token {query}) match best in layer {layer} · "
              f"head {head}?")
    return Preset("qkv", prompt, [f"{k} {_tok(lk.tokens[k])}" for k in keys], {"correct": correct, "why": why})


# -- ALiBi (the RoPE page's tab) ------------------------------------------------------------------------------
def rope_alibi_reach(inp: Inputs) -> Preset:
    """"Which ALiBi head reads furthest back?": layer 0 of the sidebar's ALiBi model (else the shipped enc-alibi) on
    the ALiBi tab's sentence; the answer is each head's measured mean distance attended (lessons.alibi.reach_rows)."""
    ckpt = inp.ckpt if inp.ckpt.model.config.pos_encoding == "alibi" else _picked(inp, "", "enc-alibi")
    if ckpt.model.config.pos_encoding != "alibi":
        raise ValueError("The ALiBi question needs a model trained with ALiBi (the shipped “enc-alibi”).")
    ids = _encode(ckpt, ROPE_SENTENCE, False, page="the ALiBi tab").ids
    on, _ = alibi_lesson.alibi_on_off(ckpt.model, ids)
    rows = alibi_lesson.reach_rows(ckpt.model, on)
    reach = rows["mean distance attended"].tolist()
    choices = [f"head {h} (m = {m})" for h, m in zip(rows["head"], rows["slope m"])]
    prompt = (f"An ALiBi model's layer 0 reads “{ROPE_SENTENCE}”. Which head reaches furthest back on average? "
              "(m: its slope; a larger m penalises distance more)")
    why = ("Mean distance attended, measured now: " + ", ".join(f"head {h} {r:.2f}" for h, r in enumerate(reach))
           + " tokens. The slope caps how far a head can look; what it looks at is learned.")
    return Preset("rope", prompt, choices, {"correct": _argmax_all(reach), "why": why})


# -- Sinusoidal -----------------------------------------------------------------------------------------------
def sinusoidal_position(inp: Inputs) -> Preset:
    """"Which position is this vector?": a position drawn from the view's settings (the same view asks the same
    question), shown by its fastest and slowest (sin, cos) pairs; the answer is the nearest row of the table."""
    s = inp.settings
    d, n_pos, base = int(s.get("sinusoidal_d", 64)), int(s.get("sinusoidal_npos", 128)), float(
        s.get("sinusoidal_base", 10000.0))
    if d < 4 or d % 2 or n_pos < 8:
        raise ValueError("The question needs an even d_model of at least 4 and at least 8 positions.")
    rng = random.Random(f"{d}|{n_pos}|{base}")
    options = sorted(rng.sample(range(n_pos), 8))
    p = options[rng.randrange(len(options))]
    pe = sinusoidal_encoding(n_pos, d, base=base).double().numpy()
    v = pe[p]
    dist = np.linalg.norm(pe[options] - v, axis=1)
    correct = [int(np.argmin(dist))]
    prompt = (f"A position vector P[p] (d_model {d}, base {base:,.0f}) starts ({v[0]:.2f}, {v[1]:.2f}) and ends "
              f"({v[-2]:.2f}, {v[-1]:.2f}). Which position p is it?")
    second = sorted(range(len(options)), key=lambda i: dist[i])[1]
    why = (f"P[{options[correct[0]]}] is that vector exactly (distance {dist[correct[0]]:.1e}); the next nearest "
           f"choice, P[{options[second]}], is {dist[second]:.2f} away. The fast first pair pins p down within each "
           "turn of its clock, the slow last pair says which turn.")
    return Preset("sinusoidal", prompt, [str(o) for o in options], {"correct": correct, "why": why})


# -- Encoder --------------------------------------------------------------------------------------------------
KEPT_MASKS = "encoder_kept_masks"  # ui.encoder.KEPT_MASKS: {sentence digest: the hidden words}, one entry


def encoder_fill(inp: Inputs) -> Preset:
    """Which word the encoder writes in the view's first blank: its top fill-in, by one masked pass now."""
    s = inp.settings
    ckpt = _picked(inp, "encoder_model", encoder_lesson.ENGLISH)
    bos = uses_bos(ckpt)
    limit = ckpt.model.config.max_len - (1 if bos else 2)
    enc = _encode(ckpt, s.get("encoder_text", "The cat sat on the mat"), bos, limit=limit, specials=(MASK,),
                  least=1 + int(bos), page="the Encoder page")
    start = 1 if bos and enc.pieces[:1] and enc.pieces[0] != MASK and len(enc.ids) > 1 else 0
    ids, words, pieces = enc.ids[start:], enc.tokens[start:], enc.pieces[start:]
    kept = next(iter((s.get(KEPT_MASKS) or {}).values()), None)
    typed = [i for i, p in enumerate(pieces) if p == MASK]
    picked = [i for i in (kept if kept is not None else ([] if typed else encoder_lesson.default_masks(words)))
              if i < len(ids)]
    b = encoder_lesson.blanks(ckpt.tokenizer, ids, words, pieces, picked)
    if not b.answers:
        raise ValueError("Hide a word on the Encoder page first: there is no blank to fill.")
    run = encoder_lesson.masked_ids_run(ckpt.model, ckpt.tokenizer, b, 8)
    fills = [(_tok(t), float(p)) for t, p in run["fills"][0]]
    options = sorted({t for t, _ in fills} | ({_tok(b.answers[0])} if b.answers[0] else set()), key=str.lower)
    best = max(fills, key=lambda f: f[1])
    correct = [options.index(best[0])]
    text = b.text if len(b.text) <= 100 else b.text[:99] + "…"
    prompt = f"Which word will the encoder write in the first blank of “{text}”?"
    why = ("Its top fill-ins: " + ", ".join(f"“{t}” {p:.0%}" for t, p in fills[:4]) + "."
           + (f" The hidden word was “{_tok(b.answers[0])}”." if b.answers[0] else ""))
    return Preset("encoder", prompt, options[:MAX_CHOICES], {"correct": correct, "why": why})


# -- Encoder–decoder ------------------------------------------------------------------------------------------
def translator_looks(inp: Inputs) -> Preset:
    """Writing its first word, which source word the translator's last layer (mean of its heads) reads most."""
    from viz_model import generate as G

    s = inp.settings
    ckpt = _picked(inp, "ed_model", "translate")
    text = str(s.get("ed_text", "The cat sat on the mat") or "")
    if not text.strip():
        raise ValueError("Type a sentence to translate on the Encoder–decoder page first.")
    strategy = G.GREEDY if s.get("ed_kind", "greedy") == "greedy" else G.Sampling(float(s.get("ed_temperature", 1.0)))
    tr = translate(ckpt.model, ckpt.tokenizer, text, max_new_tokens=ckpt.model.config.max_len - 1, strategy=strategy,
                   seed=int(s.get("ed_seed", 0)))
    if not tr.tokens:
        raise ValueError("The translator wrote no word for this sentence: there is nothing to ask about.")
    row = tr.cross_attention[-1, :, 0].float().mean(0).cpu().numpy()  # (T_src,) last layer, first target word
    keys = list(range(min(len(row), MAX_CHOICES)))
    correct = _argmax_all(row[keys])
    top = keys[correct[0]]
    labels = [_tok(t) for t in tr.source_tokens]
    prompt = (f"Writing its first word “{_tok(tr.tokens[0])}”, which source word does the translator's last layer "
              "read most (mean of its heads)?")
    why = (f"Cross-attention of the last layer from “{_tok(tr.tokens[0])}”: {row[top]:.0%} on “{labels[top]}” "
           f"(source token {top}), the most of the {len(keys)} source tokens.")
    return Preset("encoder-decoder", prompt, [f"{k} {labels[k]}" for k in keys], {"correct": correct, "why": why})


# -- RNN vs Transformer ---------------------------------------------------------------------------------------
def recurrence_recall(inp: Inputs) -> Preset:
    """"Which model recalls the key at distance D?" (at least RECALL_BAR right), from the page's own accuracy: the
    evaluation run on this server if someone ran it, else the accuracy saved in each model when it was trained."""
    from viz_model.train import RECALL_DISTANCES

    models = inp.cached("recurrence_shipped", ("cpu",), lambda: rec_lesson.load_shipped("cpu", read_only=True))
    slider = int(inp.settings.get("recurrence_distance", 40))
    D = max([d for d in RECALL_DISTANCES if d <= slider] or [RECALL_DISTANCES[0]])
    live = inp.cached("recurrence_accuracy_store", ("store",), dict).get(128)
    acc = {r.kind: r.accuracy for r in live} if live else rec_lesson.saved_accuracy(models)
    kinds = [k for k in rec_lesson.KINDS if D in acc.get(k, {})]
    if len(kinds) < 2:
        raise ValueError(f"The recall accuracy at distance {D} is not known for these models.")
    correct = [i for i, k in enumerate(kinds) if acc[k][D] >= RECALL_BAR]
    choices = [rec_lesson.name(k) for k in kinds] + ["none of them"]
    prompt = f"Which model recalls the key at distance {D} (at least {RECALL_BAR:.0%} of inputs right)?"
    why = (f"Recall accuracy at distance {D} ({'evaluated on this server' if live else 'saved when trained'}): "
           + ", ".join(f"{rec_lesson.name(k)} {acc[k][D]:.0%}" for k in kinds)
           + f"; chance is {rec_lesson.CHANCE:.0%}.")
    return Preset("recurrence", prompt, choices, {"correct": correct or [len(kinds)], "why": why})


# -- Normalization --------------------------------------------------------------------------------------------
NORM_NAMES = {"layernorm": "LayerNorm", "batchnorm": "BatchNorm", "rmsnorm": "RMSNorm"}


def norm_padding(inp: Inputs) -> Preset:
    """Padding sample 2 of the view's random batch: which norm changes sample 1's outputs (measured)."""
    s = inp.settings
    N, T, d = int(s.get("norm_N", 3)), int(s.get("norm_T", 4)), int(s.get("norm_d", 8))
    n_pad = min(max(int(s.get("norm_pad", min(2, T))), 1), T)
    x = norm_lesson.random_batch(N, T, d, int(s.get("norm_seed", 0)))
    change = norm_lesson.padding_effect(x, n_pad).sample1_change
    kinds = [k for k in NORM_NAMES if k in change]
    correct = [i for i, k in enumerate(kinds) if change[k] > 1e-6]
    choices = [NORM_NAMES[k] for k in kinds] + ["none of them"]
    prompt = (f"The last {n_pad} position(s) of sample 2 become padding (zeros). Which norm changes sample 1's "
              "outputs, whose tokens are untouched?")
    why = ("Largest change of sample 1's outputs: " + ", ".join(f"{NORM_NAMES[k]} {change[k]:.2g}" for k in kinds)
           + ". A per-token norm never looks at another sample.")
    return Preset("normalization", prompt, choices, {"correct": correct or [len(kinds)], "why": why})


# -- Train ----------------------------------------------------------------------------------------------------
def train_tying(inp: Inputs) -> Preset:
    """How the parameter count of the form's set-up changes when "Tie input/output weights" is switched: both
    models built now and counted."""
    from dataclasses import replace

    s = inp.settings
    preset = str(s.get("train_preset", "tiny"))
    form = {**train_lesson.PRESET_FORM.get(preset, {}), **{k: v for k, v in s.items() if str(k).startswith("train_")}}
    f = form.get
    spec = train_lesson.TrainSpec(
        preset=preset, task=_option(f("train_task", next(iter(TASK_LABELS))), TASK_LABELS),
        arch=_option(f("train_arch", "transformer"), train_lesson.ARCH_LABELS),
        pos_encoding=str(f("train_pos", POS_ENCODINGS[3])), rope_base=float(f("train_base", 10000.0)),
        mask=masks.kind_named(str(f("train_mask", "causal"))), tie_weights=_flag(f("train_tie", True)),
        qkv=_option(f("train_qkv", QKV_MODES[0]), train_lesson.QKV_LABELS), norm=str(f("train_norm_kind", NORMS[0])),
        norm_position=str(f("train_norm", "pre")), residual=_flag(f("train_residual", True)),
        n_layers=int(f("train_layers", 2)), n_heads=int(f("train_heads", 2)), d_model=int(f("train_dmodel", 64)),
        seq_len=int(f("train_seq", 64)))
    if spec.arch != "transformer":
        raise ValueError("Weight tying is a transformer setting: pick the Model kind “transformer” to ask.")
    vocab = load_tokenizer("word").get_vocab_size()
    _, now = train_lesson.validate(spec, vocab)
    _, other = train_lesson.validate(replace(spec, tie_weights=not spec.tie_weights), vocab)
    diff, step = other - now, vocab * spec.size()["d_model"]
    options = sorted({0, step, -step, 2 * step, -2 * step, diff})
    fmt = {v: ("no change" if v == 0 else f"{v:+,}") for v in options}
    prompt = (f"This set-up has {now:,} parameters. Switch “Tie input/output weights” "
              f"{'off' if spec.tie_weights else 'on'}: how does the count change?")
    why = (f"Built both now: {now:,} → {other:,} ({diff:+,}). One embedding matrix is vocabulary {vocab:,} × d_model "
           f"{spec.size()['d_model']} = {step:,} numbers; tying makes the output layer reuse it.")
    return Preset("train", prompt, [fmt[v] for v in options], {"correct": [options.index(diff)], "why": why})


# -- Generate -------------------------------------------------------------------------------------------------
def generate_branch(inp: Inputs) -> Preset:
    """#40 (item 5): where branches A and B of the Generate page's Branches tab first differ (their temperatures and
    seeds, the page's prompt, Max new tokens and end-token setting), generated now with the KV cache."""
    s, ckpt = inp.settings, inp.ckpt
    model = ckpt.model
    if not model.config.causal:
        raise ValueError("This model attends both ways (an encoder): it does not write branches.")
    bos = generate_lesson.prompt_bos(ckpt)
    enc = _encode(ckpt, s.get("generate_text", PROMPTS[0]), bos, limit=model.config.max_len - 1,
                  least=1 + int(bos), page="the Generate page")
    picks = [(float(s.get(f"generate_branch_t{i}", t)), int(s.get(f"generate_branch_seed{i}", seed)))
             for i, (t, seed) in enumerate(zip(generate_lesson.BRANCH_TEMPERATURES[:2], generate_lesson.BRANCH_SEEDS))]
    a, b = generate_lesson.branch_runs(
        model, enc.ids, picks, int(s.get("generate_max_new", min(12, model.config.max_len - 1))),
        bool(s.get("generate_stop_eos", True)), generate_lesson.eos_id(ckpt), lambda ids: token_texts(ckpt, ids))
    at = generate_lesson.first_divergence([a.ids, b.ids])
    n = min(max(len(a.ids), len(b.ids)), MAX_CHOICES - 2)
    choices = [f"new token {i + 1}" for i in range(n)] + ["later"] * (max(len(a.ids), len(b.ids)) > n) + ["never"]
    correct = len(choices) - 1 if at is None else min(at, n)
    prompt = (f"Branches A ({a.label.split(': ')[1]}) and B ({b.label.split(': ')[1]}) continue "
              f"“{_short(enc, 60, int(bos))}”. At which new token do they first differ?")
    text = lambda r: " ".join(_tok(t) for t in r.tokens)  # noqa: E731
    why = (f"A wrote “{text(a)}”, B “{text(b)}”: "
           + ("the same tokens." if at is None else f"they first differ at new token {at + 1}."))
    return Preset("generate", prompt, choices, {"correct": [correct], "why": why})


def generate_next(inp: Inputs) -> Preset:
    """Which token the model writes next after the view's prompt (greedy: its most probable one), from one pass now;
    the choices are its top 8 in alphabetical order, so their order gives nothing away."""
    s, ckpt = inp.settings, inp.ckpt
    model = ckpt.model
    if not model.config.causal:
        raise ValueError("This model attends both ways (an encoder): it does not write the next token.")
    bos = generate_lesson.prompt_bos(ckpt)
    enc = _encode(ckpt, s.get("generate_text", PROMPTS[0]), bos, limit=model.config.max_len - 1,
                  least=1 + int(bos), page="the Generate page")
    with torch.no_grad(), eval_mode(model):
        logits = model(torch.tensor([enc.ids], device=model.device)).logits[0, -1]
    probs = torch.softmax(logits.float(), -1).cpu().numpy()
    top = [int(i) for i in np.argsort(-probs, kind="stable")[:8]]
    label = {i: _tok(ckpt.tokenizer.decode([i], skip_special_tokens=False)) or f"<id {i}>" for i in top}
    order = sorted(top, key=lambda i: (label[i].lower(), i))
    choices = [label[i] if [label[j] for j in order].count(label[i]) == 1 else f"{label[i]} (id {i})" for i in order]
    prompt = f"Which token will the model write next after “{_short(enc, 120, int(bos))}”?"
    why = "Its next-token probabilities: " + ", ".join(f"“{label[i]}” {probs[i]:.1%}" for i in top[:5]) + "."
    return Preset("generate", prompt, choices, {"correct": [order.index(top[0])], "why": why})


# -- Cost -----------------------------------------------------------------------------------------------------
def cost_scores(inp: Inputs) -> Preset:
    """How much memory one layer's float32 (1, H, T, T) score matrix takes at the sweep's longest T (the Cost
    lesson's count; tests/test_presets.py checks it against a traced pass's own score tensor)."""
    s = inp.settings
    lo, hi = s.get("cost_cpu_T", (64, 2048))
    T, H = int(hi), int(s.get("cost_cpu_heads", 4))
    n = cost_lesson.score_matrix_bytes(T, n_heads=H)
    choices, correct = _size_choices(n, cost_lesson.size_text)
    prompt = (f"The traced path keeps each head's T × T score matrix. At T = {T:,} with {H} head(s), how much memory "
              "do one layer's float32 scores take?")
    why = (f"{H} × {T:,} × {T:,} scores × 4 bytes = {cost_lesson.size_text(n)}; doubling T quadruples it "
           f"({cost_lesson.size_text(4 * n)} at T = {2 * T:,}). SDPA never stores the matrix.")
    return Preset("cost", prompt, choices, {"correct": correct, "why": why})


# -- Logit lens -----------------------------------------------------------------------------------------------
def lens_first_top(inp: Inputs) -> Preset:
    """"At which layer does the model's final prediction first become the lens's top token?" at the view's position
    (default the last) of the view's sentence; answered by the lens now (lessons.lens.lens_view, first_top)."""
    s, ckpt = inp.settings, inp.ckpt
    bos = uses_bos(ckpt)
    enc = _encode(ckpt, s.get("lens_text", EXAMPLES[1]), bos, limit=lens_lesson.max_tokens(ckpt.model),
                  least=1 + int(bos), page="the Logit lens page")
    view = lens_lesson.lens_view(ckpt.model, enc.ids)
    T = len(enc.ids)
    pos = min(_index(s.get("lens_pos", T - 1), T - 1), T - 1)
    groups = lens_lesson.row_groups(view.n_rows)
    first = lens_lesson.first_top(view, pos)
    final = _tok(token_texts(ckpt, [int(view.final_ids[pos])])[0])
    prompt = (f"At which layer does the model's final prediction “{final}” first become the lens's top token after "
              f"“{_tok(enc.tokens[pos])}” (position {pos})?")
    names = lens_lesson.row_names(view.n_rows - 1)
    why = (f"Rank of “{final}” in each layer's lens, measured now: "
           + ", ".join(f"{n} {int(r):,}" for n, r in zip(names, view.final_rank[:, pos])) + ".")
    return Preset("lens", prompt, [g[0] for g in groups],
                  {"correct": [i for i, (_, rows) in enumerate(groups) if first in rows], "why": why})


# -- Attention vs attribution ---------------------------------------------------------------------------------
def attribution_occlusion(inp: Inputs) -> Preset:
    """"Which token matters most for this prediction, measured by occlusion?" over the view's sentence (its last 16
    typed tokens), for the view's target (the picked one of the model's top 5): the largest drop in log p when the
    token is replaced by the padding token, measured now (lessons.attribution); the why names the view's head's own
    top token, so the class can compare it with what the attention map suggested."""
    s, ckpt = inp.settings, inp.ckpt
    model = ckpt.model
    if not model.config.causal:
        raise ValueError(attribution_lesson.NOT_CAUSAL)
    bos = uses_bos(ckpt)
    enc = _encode(ckpt, s.get("attribution_text", attribution_lesson.DEFAULT_TEXT), bos,
                  limit=attribution_lesson.MAX_TOKENS, page="the Attention vs attribution page")
    if len(enc.ids) - int(bos) < attribution_lesson.MIN_WORDS:
        raise ValueError(attribution_lesson.ONE_TOKEN)
    top = attribution_lesson.top_next(model, enc.ids)
    target = top[min(attribution_lesson.rank_of(s.get("attribution_target", 0)), len(top) - 1)][0]
    layer, head = _layer_head(model.config, {"attribution_layer": model.config.n_layers - 1, **s}, "attribution")
    res = attribution_lesson.attribute(model, enc.ids, enc.tokens, layer=layer, head=head, target=target,
                                       start=int(bos), baseline=pad_token(ckpt),
                                       target_text=token_texts(ckpt, [target])[0])
    choices, correct, why = attribution_lesson.occlusion_answer(res, MAX_TOKEN_CHOICES)
    prompt = (f"Which token matters most for predicting “{_tok(res.target)}” after “{_short(enc, 90, int(bos))}”, "
              "measured by occlusion?")
    return Preset("attribution", prompt, choices, {"correct": correct, "why": why})


# -- Attention sinks -------------------------------------------------------------------------------------------
def sinks_stream_best(inp: Inputs) -> Preset:
    """"Which KV cache keeps perplexity lowest?": the streaming view's first cache size, answered by the measured
    perplexities (lessons.sinks.stream_experiment, the same cached run the page shows)."""
    model = inp.ckpt.model
    sinks_lesson.check_model(model)
    if not sinks_lesson.streams_positions(model):
        raise ValueError(sinks_lesson.NO_STREAM_POSITIONS.format(pos=sinks_lesson.POS_NAMES[model.config.pos_encoding]))
    v = sinks_lesson.view_of(inp.settings, model.config.max_len)
    ids = sinks_lesson.stream_ids(inp.ckpt, v.source, v.kind, v.n_tokens)
    r = inp.cached("sinks_stream", sinks_lesson.stream_key(inp.ckpt, v.source, v.kind, v.n_tokens, v.window, v.sinks),
                   lambda: sinks_lesson.stream_experiment(model, ids, v.window, v.sinks))
    prompt, choices, correct, why = sinks_lesson.stream_question(r, v.n_tokens, v.kind)
    return Preset("sinks", prompt, choices, {"correct": correct, "why": why})


# -- the registry ---------------------------------------------------------------------------------------------
PRESETS: dict[str, Row] = {r.name: r for r in (
    Row("start_row", "start", "Which word does this head attend to most? (Start)", start_row),
    Row("explorer_previous", "explorer", "Which head attends to the previous token? (Explorer)", explorer_previous),
    Row("masks_visible", "masks", "How many tokens can row t see? (Mask gallery)", masks_visible),
    Row("qkv_best_key", "qkv", "Which key does this query match best? (Database lookup)", qkv_best_key),
    Row("sinusoidal_position", "sinusoidal", "Which position is this vector? (Sinusoidal)", sinusoidal_position),
    Row("rope_extension", "rope", "Which RoPE method keeps every angle in range? (Context extension)",
        rope_extension),
    Row("rope_alibi_reach", "rope", "Which ALiBi head reads furthest back? (ALiBi)", rope_alibi_reach),
    Row("encoder_fill", "encoder", "Which word fills the blank? (Encoder)", encoder_fill),
    Row("translator_looks", "encoder-decoder", "Which source word does the first target word read? (Cross-attention)",
        translator_looks),
    Row("recurrence_recall", "recurrence", "Which model recalls at this distance? (Recall accuracy)",
        recurrence_recall, live=True),
    Row("norm_padding", "normalization", "Which norm does padding in another sample change? (Four reasons)",
        norm_padding),
    Row("train_tying", "train", "How does weight tying change the parameter count? (Train)", train_tying),
    Row("generate_next", "generate", "Which token comes next? (Generate)", generate_next),
    Row("generate_branch", "generate", "Where do two branches first differ? (Generate › Branches)", generate_branch),
    Row("cost_scores", "cost", "How much memory do the T × T scores take? (Cost)", cost_scores),
    Row("sinks_stream_best", "sinks", "Which KV cache keeps perplexity lowest? (Attention sinks)",
        sinks_stream_best),
    Row("attribution_occlusion", "attribution", "Which token matters most, by occlusion? (Attention vs attribution)",
        attribution_occlusion),
    Row("lens_first_top", "logit-lens", "At which layer does the final prediction first come top? (Logit lens)",
        lens_first_top),
)}


def page_of(url_path: str) -> str:
    """A page's URL path as the registry names it ("" and "home" are Start)."""
    return PAGE_ALIASES.get(url_path, url_path)


def presets_for(url_path: str) -> dict[str, Row]:
    """The page's preset questions, by name, in the registry's order."""
    page = page_of(url_path)
    return {name: row for name, row in PRESETS.items() if row.page == page}


def compute(name: str, inp: Inputs) -> Preset:
    """The preset `name` on this view, answered now; ValueError with a sentence for an unknown name or a view it
    cannot ask about (an empty sentence, one token)."""
    if name not in PRESETS:
        raise ValueError(f"There is no preset question “{name[:40]}”; the presets are: {', '.join(PRESETS)}.")
    return _checked(PRESETS[name].compute(inp))


def solo_answer_text(choices: Sequence[str], answer: dict, pick: int) -> tuple[bool, str]:
    """A student alone revealed the answer after picking `pick`: (whether the model picks it too, the sentence: their
    choice beside the model's own answer and why)."""
    correct = answer.get("correct") or []
    model = " or ".join(f"“{choices[i]}”" for i in correct)
    same = pick in correct
    head = (f"You picked “{choices[pick]}”, as the model does." if same else
            f"You picked “{choices[pick]}”; the model's own answer is {model}.")
    return same, f"{head} {answer.get('why', '')}".strip()
