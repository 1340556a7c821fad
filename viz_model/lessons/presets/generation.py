"""Questions on generation: which token the model writes next after the prompt, and where two sampled
branches first differ (Generate)."""

from __future__ import annotations

import numpy as np
import torch

from viz_model.lecture import PROMPTS
from viz_model.lessons import generate as generate_lesson
from viz_model.lessons.presets.base import MAX_CHOICES, Inputs, Preset, _encode, _short, _tok
from viz_model.model import eval_mode
from viz_model.model_text import token_texts


def _prompt(inp: Inputs, what: str):
    """The Generate page's prompt as the model reads it: (model, whether it starts with <bos>, its encoding); an
    encoder (it attends both ways) is refused, saying it does not `what`."""
    ckpt, model = inp.ckpt, inp.ckpt.model
    if not model.config.causal:
        raise ValueError(f"This model attends both ways (an encoder): it does not {what}.")
    bos = generate_lesson.prompt_bos(ckpt)
    enc = _encode(ckpt, inp.settings.get("generate_text", PROMPTS[0]), bos, limit=model.config.max_len - 1,
                  least=1 + int(bos), page="the Generate page")
    return model, bos, enc


def generate_branch(inp: Inputs) -> Preset:
    """#40 (item 5): where branches A and B of the Generate page's Branches tab first differ (their temperatures and
    seeds, the page's prompt, Max new tokens and end-token setting), generated now with the KV cache."""
    s, ckpt = inp.settings, inp.ckpt
    model, bos, enc = _prompt(inp, "write branches")
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
    ckpt = inp.ckpt
    model, bos, enc = _prompt(inp, "write the next token")
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
