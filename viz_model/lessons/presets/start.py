"""The Start page's question: which word the last token attends to most in a head, answered by one traced
pass of the model now (moved from lessons.class_mode)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from viz_model.lessons.presets.base import FOLDER_VIEW_TOKENS, MAX_TOKEN_CHOICES, Inputs, Preset, _flag, _tok
from viz_model.model import eval_mode
from viz_model.model_text import encode_for, is_folder_model, uses_bos


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
