"""Ask the class (#28): the preset questions about a view, with the model's own answer computed live.

Each preset is one function from what the view shows to (prompt, choices, answer), where answer is
{"correct": [choice indices], "why": a sentence built from the measured numbers}. The ui layer reads the view's
settings and calls these; nothing here knows Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from viz_model import rope
from viz_model.lessons import rope as rope_lesson

MAX_TOKEN_CHOICES = 16  # the class store's MAX_CHOICES: a longer sentence asks about its last 16 tokens
# The preset question a page offers (by its URL path), as the "Ask the class" box lists it
PRESET_LABELS = {"": "Which word does this head attend to most? (Start)",
                 "rope": "Which RoPE method keeps every angle in range? (Context extension)"}
# The RoPE page's context-extension settings a question reads: rope_question's `extra` name -> widget key
ROPE_EXTRA_KEYS = {"beta_fast": "rope_ext_bf", "beta_slow": "rope_ext_bs", "low_freq_factor": "rope_ext_lo",
                   "high_freq_factor": "rope_ext_hi"}


@dataclass(frozen=True)
class Preset:
    kind: str
    prompt: str
    choices: list[str]
    answer: dict


def attention_row(model, ids: Sequence[int], layer: int, head: int, query: int = -1) -> np.ndarray:
    """One query's attention weights (T,) in head (layer, head): one traced pass of the model, now."""
    with torch.no_grad():
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
    choices = [f"{i} {tokens[i].strip() or repr(tokens[i])}" for i in keys]
    best = float(row[keys].max())
    correct = [j for j, i in enumerate(keys) if row[i] >= best - 1e-9]
    top = keys[correct[0]]
    why = (f"Layer {layer} · head {head} gives {row[top]:.0%} of the attention from “{tokens[query].strip()}” to "
           f"“{tokens[top].strip()}” (token {top})" + (f", the most of the {len(keys)} tokens." if len(correct) == 1
                                                        else f", tied with {len(correct) - 1} other token(s)."))
    prompt = f"Which word will head {layer}·{head} attend to most from “{tokens[query].strip()}” (token {query})?"
    return Preset("attention", prompt, choices, {"correct": correct, "why": why})


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


def start_question(model, tokens: Sequence[str], ids: Sequence[int], layer: int, head: int) -> Preset:
    """The Start page's question: which token the last one attends to most in head (layer, head) (clipped to the
    model's layers and heads), answered by one pass of the model now."""
    if len(ids) < 2:
        raise ValueError("Type a sentence of at least two tokens on the Start page first.")
    layer, head = min(layer, model.config.n_layers - 1), min(head, model.config.n_heads - 1)
    return attention_question(tokens, attention_row(model, ids, layer, head), layer, head)


def rope_preset(config, settings: Mapping) -> Preset:
    """The RoPE page's question at its context-extension settings (`settings`: its widget values by key; a setting
    not drawn yet takes the page's default, lessons.rope.panel_defaults)."""
    d = rope_lesson.panel_defaults(config)
    L, Lp = int(settings.get("rope_ext_L", d["L"])), int(settings.get("rope_ext_Lp", d["Lp"]))
    extra = {name: float(settings[key]) for name, key in ROPE_EXTRA_KEYS.items() if key in settings}
    return rope_question(int(settings.get("rope_ext_dk", d["d_k"])), float(settings.get("rope_ext_base", d["base"])),
                         L, Lp, extra)


def model_answer_text(choices: Sequence[str], answer: dict) -> str:
    """The sentence shown once a question is revealed: the model's own answer and why (the measured numbers)."""
    correct = answer.get("correct") or []
    if not correct:
        return "No model answer for a free question: discuss it."
    names = ", ".join(f"“{choices[i]}”" for i in correct)
    return f"The model's own answer: {names}. {answer.get('why', '')}"


def tally_lines(choices: Sequence[str], counts: Sequence[int], answer: dict) -> list[tuple[bool, str, int]]:
    """One (the model picks it, choice, answers) per choice, in the question's order: the revealed tally."""
    correct = set(answer.get("correct") or [])
    return [(i in correct, c, int(n)) for i, (c, n) in enumerate(zip(choices, counts))]
