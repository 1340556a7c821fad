"""Questions on reading attention: which head attends to the previous token (Explorer), how many tokens a
row may see under a mask (Masks), which key a query matches best (Q, K and V)."""

from __future__ import annotations

import numpy as np
import torch

from viz_model import masks
from viz_model.lecture import EXAMPLES
from viz_model.lessons import qkv as qkv_lesson
from viz_model.lessons.presets.base import (
    MAX_CHOICES,
    QKV_MAX_T,
    Inputs,
    Preset,
    _argmax_all,
    _encode,
    _flag,
    _index,
    _layer_head,
    _option,
    _short,
    _tok,
)
from viz_model.model import eval_mode
from viz_model.model_text import is_folder_model, pad_token, uses_bos
from viz_model.tokenizer import PAD


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
